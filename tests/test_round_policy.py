"""A round with a policy in the loop, against a real OpenAI-compatible HTTP server on 127.0.0.1: K samples per
problem are stored with their lineage, executed, summarised; re-running the round asks and stores nothing new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.scripted_server import ScriptedServer

from flywheel.config import load_config
from flywheel.round import RoundPlan, run_round
from flywheel.store import Store


def test_policy_round_stores_executes_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cfg = load_config(overrides={"round": {"problems": 3, "families": ["diet"], "seed": 5, "api": "gurobipy",
                                           "infeasible_share": 0.0},
                                 "policy": {"max_retries": 0}})
    with ScriptedServer() as server:
        spec = f"openai:fake@{server.url}"
        plan = RoundPlan.from_config(cfg, policy=spec, samples=2, temperature=0.5)
        with Store.open(tmp_path / "store") as st:
            outcome = run_round(st, plan, workers=1)
            sent = len(server.log)
            samples = st.query("SELECT * FROM samples WHERE policy = ? ORDER BY attempt_id", [spec]).to_pylist()
            assert len(samples) == 6  # 3 problems x 2 samples
            assert {s["sample_index"] for s in samples} == {0, 1}
            for s in samples:
                assert s["exec_status"] == "ok"  # the canned program runs...
                assert s["objective_match"] is False  # ...but answers another problem (objective 12)
                assert json.loads(s["sampling_json"])["temperature"] == 0.5 and s["prompt_hash"]
                assert s["label_source"] in {"self", "teacher"}
            lineage = json.loads(st.scalar("SELECT lineage_json FROM attempts WHERE policy = ? LIMIT 1", [spec]))
            assert lineage["policy"] == spec and lineage["prompt_hash"] and lineage["env"]["packages"]
            assert all(row["samples"] == 6 and row["pass_at_1"] == 0 for row in outcome.summary)
            again = run_round(st, plan, workers=1)
            assert again.status == "complete"
            assert len(server.log) == sent  # nothing asked twice
            assert st.count("attempts") == 9  # 3 reference + 6 policy, no duplicates


def test_problems_file_round_scores_policy_samples_against_file_answers(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    bench = tmp_path / "mini.jsonl"
    # The scripted server's canned program maximises 3x with x <= 4: objective 12. One answer matches it.
    bench.write_text(json.dumps({"id": "q1", "question": "Maximise 3x with x at most 4.", "answer": 12}) + "\n"
                     + json.dumps({"id": "q2", "question": "Maximise 2x with x at most 3.", "answer": "6"}) + "\n")
    cfg = load_config(overrides={"round": {"api": "gurobipy"}, "policy": {"max_retries": 0}})
    with ScriptedServer() as server:
        spec = f"openai:fake@{server.url}"
        plan = RoundPlan.from_config(cfg, policy=spec, samples=1, problems_file=str(bench))
        assert plan.problems == 2 and plan.families == ("mini",)
        with Store.open(tmp_path / "store") as st:
            outcome = run_round(st, plan, workers=1)
            rows = st.query("SELECT problem_id, label_source, objective_match FROM samples ORDER BY 1").to_pylist()
            assert rows == [{"problem_id": "q1", "label_source": "self", "objective_match": True},
                            {"problem_id": "q2", "label_source": "self", "objective_match": False}]
            assert st.scalar("SELECT label_source FROM problems WHERE problem_id = 'q1'") == "benchmark"
            assert outcome.summary[0]["samples"] == 2 and outcome.summary[0]["policy_correct"] == 1
