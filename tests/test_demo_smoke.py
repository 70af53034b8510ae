"""The whole flywheel demo at toy size (``--size smoke``): every stage runs through the real CLI (round, export,
train, hf: policy round, eval score, eval run) and leaves its artefacts. The toy model learns nothing in a few
steps, so no score is asserted, only that each stage produced what the next one reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flywheel.demo.plots import PLOTS
from flywheel.policies.prompts import render


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    work, reports = root / "work", root / "reports"
    proc = subprocess.run([sys.executable, "-m", "flywheel.demo", "--size", "smoke", "--work", str(work),
                           "--reports", str(reports)], capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work, reports


def _sql(work: Path, query: str) -> list[dict]:
    flywheel = str(Path(sys.executable).with_name("flywheel"))
    out = subprocess.run([flywheel, "sql", "--store", str(work / "store"), "--format", "json", query],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_stage_leaves_its_artefacts(demo) -> None:
    from transformers import AutoModelForCausalLM

    work, reports = demo
    # Store: round-0 references and the hf: policy's samples, with lineage to their problems and the checkpoint.
    rows = _sql(work, "select policy, count(*) as n, count(distinct problem_id) as problems from samples group by 1")
    by_policy = {r["policy"]: r for r in rows}
    assert by_policy["reference"]["n"] >= 6
    policy = [p for p in by_policy if p.startswith("hf:")]
    assert len(policy) == 1 and policy[0].endswith("sft-r0/final"), by_policy
    orphans = _sql(work, "select count(*) as n from samples s where s.problem_id not in (select problem_id from "
                         "problems)")
    assert orphans[0]["n"] == 0

    # Shards: CPT text and SFT chat records whose prompt is the policy's code_only prompt.
    for shard in ("cpt0", "sft0", "sft-r1", "raw", "clean", "heldout"):
        assert pq.read_metadata(work / "shards" / shard / "train.parquet").num_rows > 0, shard
    sft = pq.read_table(work / "shards" / "sft0" / "train.parquet").to_pylist()[0]
    question = _sql(work, f"select question from problems where problem_id = '{sft['problem_id']}'")[0]["question"]
    sent = render("code_only", question=question.strip(), api="gurobipy").messages
    assert sft["messages"][:-1] == [dict(m) for m in sent]
    assert sft["messages"][-1]["content"].startswith("```python")

    # Checkpoints load with transformers (the dense Qwen3 the demo trains), all with the one demo tokenizer.
    tokenizer = (work / "tokenizer" / "tokenizer.json").read_text()
    for run in ("cpt", "sft-r0", "sft-random", "sft-r1"):
        model = AutoModelForCausalLM.from_pretrained(work / "runs" / run / "final")
        assert type(model).__name__ == "Qwen3ForCausalLM"
        assert (work / "runs" / run / "final" / "tokenizer.json").read_text() == tokenizer, run

    # Evaluation and the committed outputs.
    results = json.loads((reports / "results.json").read_text())
    assert [r["round"] for r in results["c_rounds"]] == [0, 1]
    for r in results["c_rounds"]:
        assert r["items"] == 2 and 0.0 <= r["pass@1_strict"] <= 1.0 and 0.0 <= r["copy_rate"] <= 1.0
    assert len(results["a_clean_vs_raw"]) == 4 and results["copy_curve"]
    # (a): each raw subsample holds the policy's samples first, so the contract-rejected ones are in it.
    raw = [r for r in results["a_clean_vs_raw"] if r["data"] == "raw"]
    assert all(r["policy_rows"] >= r["rejected_rows"] for r in raw)
    assert results["settings"]["heldout_in_training_store"] == 0
    assert results["b_cpt_vs_random"]["random_init"]["val_curve"]
    assert (work / "eval" / "r0" / "verdicts.jsonl").exists()
    assert "pass@1_strict" in results["benchmark"] or "skipped" in results["benchmark"]
    for name in PLOTS:
        assert (reports / name).stat().st_size > 5000, name  # a rendered figure, not an empty file
    assert "Pass@1 by flywheel round" in (reports / "results.md").read_text()
