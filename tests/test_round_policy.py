"""A round with a policy in the loop, against a real OpenAI-compatible HTTP server on 127.0.0.1: K samples per
problem are stored with their lineage, executed, summarised; re-running the round asks and stores nothing new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.config import load_config
from flywheel.policies.scripted_server import ScriptedServer
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
