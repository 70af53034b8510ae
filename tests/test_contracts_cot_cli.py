"""Chain of thought from the IR (deterministic, several styles, true to the model) and the contracts CLI against a
real store (run, explain, list) and the real sandbox (equivalent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts.api import Outcome, get_contract
from contracts.cot import STYLES, chain_of_thought, chat_messages, generator_response, policy_response
from contracts.testing import make_sample
from flywheel.generators.testing import problem_with_truth
from solvers.render import render

runner = CliRunner()


@pytest.mark.parametrize("family", ["production_planning", "facility_location", "multi_knapsack"])
def test_cot_is_deterministic_varied_and_consistent(family: str) -> None:
    p = problem_with_truth(family, 1)
    texts = {s: chain_of_thought(p, "gurobipy", s) for s in STYLES}
    assert len(set(texts.values())) == len(STYLES)  # the styles really differ
    assert chain_of_thought(p, "gurobipy", "narrative") == texts["narrative"]  # same input, same text
    code = render(p.ir, "gurobipy")
    for style in STYLES:
        response = generator_response(p, code, "gurobipy", style)
        assert response.endswith("```\n") and "```python\n" in response
        # what the reasoning states is true of the model the reference program builds
        v = get_contract("cot_consistent")(make_sample(p, response=response, code=code))
        assert v.outcome == Outcome.PASS, (style, v.message)
        assert v.evidence["stated"]["n_vars"] == [len(p.ir.variables)]
    msgs = chat_messages(p, response)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"] and p.question in msgs[1]["content"]


def test_policy_response_keeps_good_reasoning_and_replaces_wrong() -> None:
    p = problem_with_truth("production_planning", 1)
    code = render(p.ir, "gurobipy")
    good = make_sample(p, response=f"We maximise total profit.\n```python\n{code}```", code=code)
    assert policy_response(good)[1] == "own"
    wrong = make_sample(p, response=f"We minimise the total cost.\n```python\n{code}```", code=code)

    def rewriter(text, problem):  # noqa: ANN001, ANN202
        return text.replace("minimise the total cost", "maximise total profit")

    text, source = policy_response(wrong, rewriter)
    assert source == "rewritten" and "maximise total profit" in text
    assert policy_response(wrong, lambda t, q: t)[1] == "generated"  # a rewrite that stays wrong is not used


@pytest.fixture()
def store_with_samples(tmp_path: Path) -> tuple[Path, list[str]]:
    from flywheel.store import Store
    from flywheel.store.rows import attempt_row, execution_row, problem_row, solve_rows

    p = problem_with_truth("production_planning", 2)
    good = make_sample(p, code=render(p.ir, "gurobipy"), attempt_id="good")
    bad_solve = good.execution.solves[0].model_copy(update={"objective": p.ground_truth.objective + 7})
    bad = make_sample(p, code=render(p.ir, "gurobipy"), attempt_id="bad", solves=(bad_solve,))
    root = tmp_path / "store"
    with Store.open(root) as st:
        st.write("problems", 0, [problem_row(p)])
        st.write("attempts", 0, [attempt_row(s.attempt) for s in (good, bad)])
        st.write("executions", 0, [execution_row(s.sample_id, s.execution) for s in (good, bad)])
        st.write("solves", 0, [r for s in (good, bad) for r in solve_rows(s.sample_id, s.execution)])
    return root, ["good", "bad"]


@pytest.mark.slow
def test_cli_run_and_explain_against_the_store(store_with_samples: tuple[Path, list[str]]) -> None:
    from flywheel.cli import app
    from flywheel.store import Store

    root, _ = store_with_samples
    res = runner.invoke(app, ["contracts", "run", "--suite", "generator", "--store", str(root), "--format", "json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["accepted"] == 1 and summary["rejected_by"] == {"objective_matches": 1}
    with Store.open(root, create=False) as st:
        got = {(r["contract"], r["outcome"]): r["n"] for r in st.query(
            "select contract, outcome, count(*) as n from verdicts group by 1, 2").to_pylist()}
    assert got[("objective_matches", "pass")] == 1 and got[("objective_matches", "fail")] == 1
    res = runner.invoke(app, ["contracts", "explain", "bad", "--store", str(root), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    om = next(v for v in data["verdicts"] if v["contract"] == "objective_matches")
    assert om["outcome"] == "fail" and om["evidence"]["rule"] == "strict"
    res = runner.invoke(app, ["contracts", "list", "--format", "json"])
    assert res.exit_code == 0 and "structurally_equivalent" in {c["name"] for c in json.loads(res.output)["contracts"]}


@pytest.mark.slow
def test_cli_equivalent_runs_both_programs_in_the_sandbox(tmp_path: Path) -> None:
    from flywheel.cli import app

    p = problem_with_truth("transportation", 1)
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text(render(p.ir, "gurobipy"))
    b.write_text(render(p.ir, "ortools"))
    dropped = p.ir.model_copy(update={"constraints": p.ir.constraints[1:]})
    c.write_text(render(dropped, "gurobipy"))
    res = runner.invoke(app, ["contracts", "equivalent", str(a), str(b), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["equivalent"] is True and out["layer"] in ("exact", "wl", "semantic")
    res = runner.invoke(app, ["contracts", "equivalent", str(a), str(c), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["equivalent"] is False
