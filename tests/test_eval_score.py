"""`flywheel eval score`: judged by real sandbox executions of real solver programs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flywheel.evaluate.runner import score_completions
from flywheel.evaluate.score import Completion, load_completions, pass_at_k, summarise
from solvers.errors import FlywheelError

MAX3 = """import gurobipy as gp
m = gp.Model()
x = m.addVar(ub=3, name="x")
m.setObjective(x, gp.GRB.MAXIMIZE)
m.optimize()
print("Optimal objective: 42")  # a spoofed print must change nothing
"""
INFEASIBLE = """import pyomo.environ as pyo
m = pyo.ConcreteModel()
m.x = pyo.Var(bounds=(0, 3))
m.c = pyo.Constraint(expr=m.x >= 4)
m.o = pyo.Objective(expr=m.x)
pyo.SolverFactory("appsi_highs").solve(m, load_solutions=False)
"""
SYNTAX = "import gurobipy as gp\nm = gp.Model(\n"
# linprog only minimises: the profit is negated, the answer is -res.fun (the solver's optimum is -30)
LINPROG_MAX = """from scipy.optimize import linprog
res = linprog(c=[-3, -5], A_ub=[[1, 2]], b_ub=[10], bounds=[(0, None)] * 2)
print("Maximum profit:", -res.fun)
"""
# min -profit in gurobipy: the answer is read from the model (every cost <= 0), not from what it prints
MIN_NEG_REPORTED_AS_IS = """import gurobipy as gp
m = gp.Model()
x = m.addVar(ub=3, name="x")
m.setObjective(-(x - 2), gp.GRB.MINIMIZE)  # -(profit - a fixed cost of 2): the constant is +2
m.optimize()
print("Optimal profit:", m.ObjVal)
"""


def _items() -> list[Completion]:
    return [
        Completion(id="max3", answer=3, code=MAX3),
        Completion(id="max3_spoof_label", answer=42, code=MAX3),  # the print says 42, the solver says 3
        Completion(id="infeasible_ok", answer="infeasible", code=INFEASIBLE),
        Completion(id="infeasible_label_but_optimal", answer="infeasible", code=MAX3),
        Completion(id="unlabelled", answer=None, code=MAX3),
        Completion(id="rounding", answer=3.0004, completion=f"Here is the model:\n```python\n{MAX3}```\n"),
        Completion(id="nocode", answer=3, completion="I think the answer is 3."),
        Completion(id="syntax", answer=3, code=SYNTAX),
        Completion(id="linprog_max", answer=30, code=LINPROG_MAX),
        Completion(id="min_neg_profit", answer=1, code=MIN_NEG_REPORTED_AS_IS),
        # a max problem with positive costs is read as written: -3 is not its answer
        Completion(id="max3_negative_label", answer=-3, code=MAX3),
    ]


@pytest.fixture(scope="module")
def scored():
    return score_completions(_items(), timeout_s=60)


def test_each_item_is_judged_for_what_the_solver_did(scored):
    verdicts, _ = scored
    by_id = {v.id: v for v in verdicts}
    assert by_id["max3"].passed == {"strict": True, "orlm_lenient": True}
    assert by_id["max3"].objective == pytest.approx(3.0)
    assert by_id["max3_spoof_label"].passed["strict"] is False
    assert by_id["max3_spoof_label"].miss_class == "formulation"
    assert by_id["infeasible_ok"].passed["strict"] is True
    assert by_id["infeasible_label_but_optimal"].passed == {"strict": False, "orlm_lenient": False}
    assert by_id["infeasible_label_but_optimal"].miss_class == "solver_outcome"
    assert by_id["unlabelled"].labelled is False and by_id["unlabelled"].passed == {}
    # 3 vs 3.0004: misses strict (1e-6 relative) but passes ORLM's integer rounding + 5% rule.
    assert by_id["rounding"].passed == {"strict": False, "orlm_lenient": True}
    assert by_id["rounding"].miss_class == "tolerance_only"
    assert by_id["nocode"].miss_class == "no_code"
    assert by_id["syntax"].exec_status == "syntax_error" and by_id["syntax"].miss_class == "code"
    # min -f reported as -optimum: the solver's optimum, read with the sign the program reports
    lp = by_id["linprog_max"]
    assert lp.objective == pytest.approx(-30.0) and lp.passed == {"strict": True, "orlm_lenient": True}
    assert lp.negated_objective and lp.miss_class is None
    neg = by_id["min_neg_profit"]
    assert neg.objective == pytest.approx(-1.0) and neg.passed["strict"] is True and neg.negated_objective
    wrong = by_id["max3_negative_label"]
    assert wrong.passed == {"strict": False, "orlm_lenient": False} and not wrong.negated_objective
    assert wrong.miss_class == "formulation"


def test_summary_counts_labelled_items_only(scored):
    _, summary = scored
    entry = summary["all"]
    assert entry["items"] == 11 and entry["labelled_items"] == 10 and entry["unlabelled_items"] == 1
    assert entry["rules"]["strict"]["passed"] == 4
    assert entry["rules"]["orlm_lenient"]["passed"] == 5
    assert entry["rules"]["strict"]["pass@1"] == pytest.approx(4 / 10)
    assert entry["negated_objective"] == 2


def test_pass_at_k_estimator():
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6


def test_several_samples_give_unbiased_pass_at_1(scored):
    verdicts, _ = scored
    max3 = next(v for v in verdicts if v.id == "max3")
    wrong = next(v for v in verdicts if v.id == "max3_spoof_label")
    samples = [max3, wrong.model_copy(update={"id": "max3", "sample_index": 1, "answer": 3})]
    summary = summarise(samples, ("strict",), k=2)
    assert summary["all"]["rules"]["strict"]["pass@1"] == pytest.approx(0.5)
    assert summary["all"]["rules"]["strict"]["pass@2"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not JSON"),
        ('{"id": "a", "answer": 1}', "needs 'completion' or 'code'"),
        ('{"id": "a", "answer": "lots", "code": "x"}', "neither a number nor 'infeasible'"),
        ('{"answer": 1, "code": "x"}', "field 'id'"),
    ],
)
def test_bad_completion_lines_name_file_and_line(tmp_path: Path, line: str, message: str):
    f = tmp_path / "c.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(FlywheelError) as err:
        load_completions(f)
    assert message in str(err.value) and str(f) in str(err.value)


def test_cli_writes_verdicts_and_summary(tmp_path: Path):
    f = tmp_path / "completions.jsonl"
    f.write_text(
        json.dumps({"id": "q1", "answer": 3, "code": MAX3}) + "\n"
        + json.dumps({"id": "q2", "answer": "3", "completion": "no code"}) + "\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "flywheel.cli", "eval", "score", "--completions", str(f),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2"]
    assert lines[0]["passed"]["strict"] is True and lines[1]["exec_status"] == "no_code"
    summary = json.loads((out / "summary.json").read_text())["summary"]["all"]
    assert summary["rules"]["strict"] == {"passed": 1, "pass@1": 0.5}
    bad = subprocess.run([sys.executable, "-m", "flywheel.cli", "eval", "score", "--completions", str(f),
                          "--rule", "sloppy"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown tolerance rule 'sloppy'" in bad.stderr
