"""``flywheel.rewards``: the scoring core with real sandbox executions (local pool and a running service), the TRL
and verl adapters with their frameworks' data shapes, reward logging to a real store, and ``export --stage rl``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import flywheel.rewards as rewards
from flywheel.curation.export import ExportRequest, export_shard
from flywheel.generators.base import generate_problem
from flywheel.rewards.core import RewardWeights, completion_text, parse_answer
from flywheel.store import Store
from flywheel.store.rows import attempt_row, execution_row, problem_row, solve_rows
from solvers.ground_truth import solve_ground_truth
from solvers.records import Attempt
from solvers.render import render
from solvers.sandbox import Program, run_batch

LP = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=4, name="x"); y = m.addVar(ub=3, name="y")
m.addConstr(x + y <= {cap}, name="c")
m.setObjective(3 * x + 2 * y, gp.GRB.MAXIMIZE)
m.optimize()
"""
INFEASIBLE = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=1, name="x")
m.addConstr(x >= 2, name="c")
m.optimize()
"""


def fenced(code: str) -> str:
    return f"Here is the model.\n```python\n{code}```\n"


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FLYWHEEL_SANDBOX_URL", "FLYWHEEL_REWARD_STORE", "FLYWHEEL_REWARD", "FLYWHEEL_REWARD_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    rewards._settings.clear()


def test_parse_answer_and_completion_shapes() -> None:
    assert parse_answer("14") == 14.0 and parse_answer(3) == 3.0 and parse_answer(" Infeasible ") == "infeasible"
    assert parse_answer("n/a") is None and parse_answer(float("nan")) is None
    chat = [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert completion_text(chat) == "a\nb" and completion_text({"content": "c"}) == "c"


def test_trl_reward_strict_match_infeasible_and_no_code() -> None:
    # Optimum of LP with cap 5: x = 4, y = 1 -> 14. Strict rule: |p - g| <= 1e-6 (|g| + 1).
    completions = [fenced(LP.format(cap=5)),                              # right
                   [{"role": "assistant", "content": fenced(LP.format(cap=5))}],  # right, chat format
                   fenced(LP.format(cap=5)),                              # off by 1e-3: wrong under the strict rule
                   fenced(INFEASIBLE),                                    # infeasible, as the answer says
                   fenced(LP.format(cap=6)),                              # runs, solves, wrong objective (15)
                   "I do not know."]                                      # no program
    answers = [14, "14", 14.001, "infeasible", 14, 14]
    got = rewards.solver_reward(["p"] * 6, completions, answer=answers)
    assert got == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]


def test_partial_credit_and_format_term(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLYWHEEL_REWARD", "partial")
    reference = next(iter(run_batch([Program(program_id="ref", code=LP.format(cap=5))])))
    ref_mps = reference.final_solve.model_mps
    assert ref_mps
    # Same model, wrong claimed answer: runs (0.1) + solves (0.1) + feasible on the reference (0.2) + structurally
    # equivalent (0.3) + format (0.05).
    scores, _, _ = rewards.score_completions([fenced(LP.format(cap=5))], [99], reference_mps=[ref_mps])
    assert scores[0].reward == pytest.approx(0.75) and not scores[0].match
    assert set(scores[0].parts) == {"executes", "solves", "feasible", "equivalent", "format"}
    # A different model (cap 6): x=4, y=2 violates the reference's x + y <= 5; not equivalent either.
    scores, _, _ = rewards.score_completions([fenced(LP.format(cap=6))], [99], reference_mps=[ref_mps])
    assert scores[0].reward == pytest.approx(0.25)
    # A crash earns only the format term.
    scores, _, _ = rewards.score_completions([fenced("raise SystemExit(3)\n")], [14])
    assert scores[0].reward == pytest.approx(0.05)
    assert RewardWeights.from_env().executes == 0.1


def test_infrastructure_failure_is_a_missing_reward(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("FLYWHEEL_SANDBOX_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("FLYWHEEL_SANDBOX_RETRIES", "1")
    got = rewards.solver_reward(["p", "p"], [fenced(LP.format(cap=5)), "no code"], answer=[14, 14])
    assert got == [None, 0.0]  # None, never 0, for the program the sandbox could not run; no code stays 0
    assert rewards.compute_score("or", fenced(LP.format(cap=5)), "14") is None


def test_verl_compute_score_single_and_batch_shapes(tmp_path: Path) -> None:
    # NaiveRewardManager: compute_score(data_source=str, solution_str=str, ground_truth=str, extra_info=dict)
    info = {"problem_id": "lp5", "answer": "14", "reference_model_hash": "", "reference_mps": ""}
    assert rewards.compute_score("or-flywheel/lp", fenced(LP.format(cap=5)), "14", info) == 1.0
    assert rewards.compute_score("or-flywheel/lp", fenced(LP.format(cap=6)), "14", info) == 0.0
    # BatchRewardManager: lists in, list out, one sandbox batch.
    got = rewards.compute_score(["or-flywheel/lp"] * 3, [fenced(LP.format(cap=5)), fenced(INFEASIBLE), "x"],
                                ["14", "infeasible", "14"], [info, info, info])
    assert got == [1.0, 1.0, 0.0]


def test_reward_calls_are_logged_with_lineage(tmp_path: Path) -> None:
    store = tmp_path / "store"
    rewards.configure(store=str(store), policy="grpo-run-1", checkpoint="ckpt-abc")
    rewards.solver_reward(["Q1", "Q2"], [fenced(LP.format(cap=5)), "none"], answer=[14, 14], problem_id=["a", "b"],
                          step=7)
    with Store.open(store, create=False) as st:
        rows = st.query("SELECT a.problem_id, a.policy, a.checkpoint_hash, a.sampling_json, e.status "
                        "FROM attempts a LEFT JOIN executions e USING (attempt_id) ORDER BY 1").to_pylist()
        assert st.count("solves") == 1
    assert [r["problem_id"] for r in rows] == ["a", "b"]
    assert {r["policy"] for r in rows} == {"rl:grpo-run-1"} and {r["checkpoint_hash"] for r in rows} == {"ckpt-abc"}
    sampling = [json.loads(r["sampling_json"]) for r in rows]
    assert [s["reward"] for s in sampling] == [1.0, 0.0] and {s["step"] for s in sampling} == {7}
    assert [r["status"] for r in rows] == ["ok", None]  # no program, no execution


def test_rewards_through_the_service_equal_the_local_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_sandbox_serve import Server

    completions = [fenced(LP.format(cap=5)), fenced(LP.format(cap=6)), fenced(INFEASIBLE)]
    answers = [14, 14, "infeasible"]
    local = rewards.solver_reward(["p"] * 3, completions, answer=answers)
    server = Server(tmp_path, "--workers", "2")
    try:
        monkeypatch.setenv("FLYWHEEL_SANDBOX_URL", server.url)
        remote = rewards.solver_reward(["p"] * 3, completions, answer=answers)
        assert server.metric('flywheel_sandbox_programs_total{status="ok"}') >= 2
    finally:
        server.stop()
    assert remote == local == [1.0, 0.0, 1.0]


@pytest.fixture(scope="module")
def rl_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rl") / "store"
    problems, attempts, executions = [], [], []
    for i, family in enumerate(("diet", "transportation", "production_planning", "blending")):
        p = generate_problem(family, i, 1, 0.0)
        p = p.model_copy(update={"ground_truth": solve_ground_truth(p.ir)})
        code = render(p.ir, "gurobipy")
        a = Attempt(attempt_id=f"ref-{i}", problem_id=p.problem_id, api="gurobipy", code=code, response=code)
        problems.append(p)
        attempts.append(a)
    for a, e in zip(attempts, run_batch([Program(program_id=a.attempt_id, code=a.code) for a in attempts]),
                    strict=True):
        executions.append((a, e))
    with Store.open(path) as st, st.lock():
        st.write("problems", 1, [problem_row(p) for p in problems])
        st.write("attempts", 1, [attempt_row(a) for a in attempts])
        st.write("solves", 1, [s for a, e in executions for s in solve_rows(a.attempt_id, e)])
        st.write("executions", 1, [execution_row(a.attempt_id, e) for a, e in executions])
    return path


def test_export_rl_layout_for_trl_and_verl(rl_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "rl"
    with Store.open(rl_store, create=False) as st:
        manifest = export_shard(st, ExportRequest(stage="rl", out=out, include_rejected=True, decontaminate=False))
        refs = {r["problem_id"]: r["code"] for r in st.query("SELECT problem_id, code FROM attempts").to_pylist()}
    assert manifest["counts"]["train"] + manifest["counts"]["val"] == 4
    rows = [r for split in ("train", "val") if (out / f"{split}.parquet").exists()
            for r in pq.read_table(out / f"{split}.parquet").to_pylist()]
    assert len(rows) == 4
    for row in rows:
        # verl's RLHFDataset reads prompt (chat list), data_source, ability, reward_model, extra_info.
        assert row["prompt"][-1]["role"] == "user" and all(m["role"] != "assistant" for m in row["prompt"])
        assert row["data_source"].startswith("or-flywheel/") and row["ability"] == "operations-research"
        assert row["reward_model"]["style"] == "rule"
        assert row["reward_model"]["ground_truth"] == row["answer"] == row["extra_info"]["answer"]
        assert len(row["extra_info"]["reference_model_hash"]) == 16 and "ROWS" in row["reference_mps"]
    # The exported ground truth is the one the reward needs: the reference program scores 1, through both adapters.
    texts = [fenced(refs[r["problem_id"]]) for r in rows]
    assert rewards.compute_score([r["data_source"] for r in rows], texts,
                                 [r["reward_model"]["ground_truth"] for r in rows],
                                 [r["extra_info"] for r in rows]) == [1.0] * 4
    assert rewards.solver_reward([r["prompt"] for r in rows], texts, answer=[r["answer"] for r in rows],
                                 reference_mps=[r["reference_mps"] for r in rows]) == [1.0] * 4
    # TRL and Hugging Face datasets load the layout as it is.
    from datasets import load_dataset

    ds = load_dataset("parquet", data_files=str(out / "train.parquet"), split="train")
    assert {"prompt", "answer", "reward_model", "extra_info"} <= set(ds.column_names)
