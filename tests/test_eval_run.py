"""`flywheel eval run`: a real OpenAI-compatible HTTP server on 127.0.0.1 answers real NL4Opt questions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.scripted_server import ScriptedServer

from flywheel.evaluate.run import evaluate_policy, load_items

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "nl4opt" / "test.jsonl"

DUCKS = """```python
import gurobipy as gp
from gurobipy import GRB
m = gp.Model("ducks")
boat = m.addVar(vtype=GRB.INTEGER, ub=12, name="boat")
canoe = m.addVar(vtype=GRB.INTEGER, name="canoe")
m.addConstr(canoe >= 0.6 * (boat + canoe))
m.addConstr(10 * boat + 8 * canoe >= 300)
m.setObjective(20 * boat + 40 * canoe, GRB.MINIMIZE)
m.optimize()
print(m.ObjVal)
```"""
BROKEN = "```python\nimport gurobipy as gp\nm = gp.Model(\n```"


def _reply(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    if "ducks" in text:  # right on the first try
        return DUCKS
    if "A previous program" in text and "Write a corrected program" in text:
        return DUCKS  # the self-correction turn "fixes" it (to the ducks model: a formulation miss)
    return BROKEN


@pytest.fixture()
def items(tmp_path: Path):
    if not BENCH.is_file():
        pytest.skip("shared benchmarks not present")
    folder = tmp_path / "nl4opt"
    folder.mkdir()
    shutil.copy(BENCH, folder / "test.jsonl")
    return load_items([str(folder)], limit=3)


def test_zero_shot_and_self_correction_are_reported_separately(items, tmp_path: Path):
    assert items[0].question.count("ducks") >= 1 and items[0].answer == 1160.0
    with ScriptedServer(reply=_reply) as server:
        spec = f"openai:test-model@{server.url}"
        result = evaluate_policy(items, spec, cache_dir=tmp_path / "cache", self_correct=1, timeout_s=60)
        by_id = {v.id: v for v in result.verdicts}
        assert by_id[items[0].id].passed == {"strict": True, "orlm_lenient": True}
        assert by_id[items[1].id].exec_status == "syntax_error" and by_id[items[1].id].miss_class == "code"
        zero_shot = result.summary["nl4opt"]["rules"]["strict"]
        assert zero_shot["passed"] == 1 and zero_shot["pass@1"] == pytest.approx(1 / 3)
        corrected = {v.id: v for v in result.corrected_verdicts}
        # The corrected turn now runs (it solves the ducks model: wrong for these items, a formulation miss).
        assert corrected[items[1].id].exec_status == "ok"
        assert corrected[items[1].id].miss_class == "formulation"
        assert result.summary["nl4opt"]["rules"]["strict"]["passed"] == 1  # zero-shot number untouched
        sent = len(server.log)
        # Re-running sends no request that already succeeded (response cache).
        again = evaluate_policy(items, spec, cache_dir=tmp_path / "cache", self_correct=1, timeout_s=60)
        assert len(server.log) == sent
        assert again.summary == result.summary


def test_cli_eval_run_writes_summary(items, tmp_path: Path):
    from typer.testing import CliRunner

    from flywheel.cli import app

    bench_dir = Path(items[0].benchmark)
    with ScriptedServer(reply=_reply) as server:
        out = tmp_path / "out"
        res = CliRunner().invoke(app, ["eval", "run", "--policy", f"openai:m@{server.url}", "--benchmark",
                                       str(tmp_path / bench_dir), "--limit", "2", "--out", str(out),
                                       "--format", "json"])
        assert res.exit_code == 0, res.output
        doc = json.loads((out / "summary.json").read_text())
        assert doc["summary"]["nl4opt"]["labelled_items"] == 2
        assert doc["summary"]["nl4opt"]["rules"]["orlm_lenient"]["passed"] == 1


def test_eval_run_on_an_hf_checkpoint_records_the_result_on_its_model_card(items, tmp_path: Path):
    """`flywheel eval run --policy hf:DIR` on a real (tiny, random) checkpoint writes the benchmark's Pass@1 into
    DIR/README.md; a second run with the same settings replaces the entry instead of adding one."""
    from tiny_models import write_tiny_llama
    from typer.testing import CliRunner

    from flywheel.cli import app
    from training.card import read_card

    ckpt = write_tiny_llama(tmp_path / "ckpt")
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text("[policy]\nmax_tokens = 8\n")  # a random model writes no program; keep generation short
    bench_dir = Path(items[0].benchmark)
    for _ in range(2):
        res = CliRunner().invoke(app, ["eval", "run", "--policy", f"hf:{ckpt}", "--benchmark", str(tmp_path / bench_dir),
                                       "--limit", "1", "--config", str(cfg), "--cache-dir", str(tmp_path / "c"),
                                       "--format", "json"])
        assert res.exit_code == 0, res.output
    card = read_card(ckpt)
    evals = card["flywheel"]["eval"]
    assert [e["benchmark"] for e in evals] == ["nl4opt"]
    assert evals[0]["labelled_items"] == 1 and evals[0]["pass@1"]["strict"] == 0.0
    assert "nl4opt" in (ckpt / "README.md").read_text()
