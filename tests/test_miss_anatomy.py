"""``flywheel.evaluate.anatomy``: each kind of wrong program, made from a real reference program, lands in its class."""

from __future__ import annotations

import re

import pytest

from flywheel.evaluate.anatomy import classify, data_literals, miss_anatomy
from flywheel.generators.base import generate_problem
from solvers.render import render

RAN = {"exec_status": "ok", "solve_status": "optimal", "miss_class": "formulation", "error": ""}


@pytest.fixture(scope="module")
def reference() -> str:
    p = generate_problem("transportation", 7, 1, 0.0)
    return render(p.ir, "gurobipy", p.question)


def _line(code: str, start: str) -> str:
    return next(x for x in code.splitlines() if x.startswith(start))


def test_the_reference_itself_differs_only_in_its_model(reference: str) -> None:
    data = data_literals(reference)
    assert data is not None and {"sources", "destinations", "supply", "demand", "cost"} <= set(data)
    assert "m" not in data  # the data end where the model starts
    assert classify(RAN, reference, reference) == ("model", "formulation")


def test_each_data_mistake_gets_its_class(reference: str) -> None:
    dest = _line(reference, "destinations = ")
    names = re.findall(r'"([^"]+)"', dest)
    dropped = reference.replace(dest, "destinations = [" + ", ".join(f'"{n}"' for n in names[:-1]) + "]")
    kind, detail = classify(RAN, dropped, reference)
    assert kind == "entities" and names[-1] in detail and detail.startswith("destinations")

    shuffled = reference.replace(dest, "destinations = [" + ", ".join(f'"{n}"' for n in names[::-1]) + "]")
    assert classify(RAN, shuffled, reference) == ("entity order", "destinations")

    supply = _line(reference, "supply = ")
    first = re.search(r": (\d+)", supply)
    assert first is not None
    wrong = reference.replace(supply, supply.replace(first.group(0), f": {int(first.group(1)) + 1000}", 1))
    kind, detail = classify(RAN, wrong, reference)
    assert kind == "numbers copied wrong" and str(int(first.group(1)) + 1000) in detail

    values = re.findall(r": (\d+)", supply)
    assert len(values) >= 2 and values[0] != values[1]  # seed 7: two sources, different supplies
    swapped = supply.replace(f": {values[0]}", ": X", 1).replace(f": {values[1]}", f": {values[0]}", 1)
    swapped = swapped.replace(": X", f": {values[1]}", 1)
    assert classify(RAN, reference.replace(supply, swapped), reference) == ("numbers misplaced", "supply")


def test_a_program_without_a_solve_is_a_build_error(reference: str) -> None:
    failed = {"exec_status": "model_build_error", "solve_status": None,
              "error": "ValueError: zip() argument 2 is shorter than argument 1"}
    assert classify(failed, reference, reference) == ("build error", "ValueError")
    assert classify(RAN, "def broken(:", reference)[0] == "build error"
    infeasible = {"exec_status": "solver_infeasible", "solve_status": "infeasible", "error": "final solve: infeasible"}
    assert classify(infeasible, reference, reference)[0] == "model"  # it solved: its data are compared


def test_counts_cover_the_strict_misses_only(reference: str) -> None:
    dest = _line(reference, "destinations = ")
    reordered = reference.replace(dest, dest.replace("[", "[\"Extra\", ", 1))
    verdicts = [{"id": "a", "passed": {"strict": True}, **RAN},  # passed: not counted whatever its program
                {"id": "b", "passed": {"strict": False}, **RAN},
                {"id": "c", "passed": {"strict": False}, **RAN},
                {"id": "d", "passed": {"strict": False}, "exec_status": "timeout", "solve_status": None, "error": ""}]
    programs = {"a": "x = 1", "b": reordered, "c": reference, "d": ""}
    counts = miss_anatomy(verdicts, programs, {k: reference for k in "abcd"})
    assert counts == {"build error": 1, "entities": 1, "model": 1}
    assert list(counts) == ["build error", "entities", "model"]  # in the classes' order


def test_the_demo_classes_an_evaluation_directory(tmp_path) -> None:
    """``flywheel.demo.run._miss_anatomy``: completions and verdicts as ``flywheel eval score`` leaves them, the
    references rendered for the same problems (what a resumed demo also adds to an older evaluation)."""
    import json

    from flywheel.demo.run import _miss_anatomy

    problems = [generate_problem("transportation", seed, 1, 0.0) for seed in (7, 8)]
    right, wrong = (render(p.ir, "gurobipy", p.question) for p in problems)
    supply = _line(wrong, "supply = ")
    wrong = wrong.replace(supply, supply.replace(": ", ": 1", 1))  # 87 -> 187: a number the question never states
    completions = [{"id": p.problem_id, "completion": f"```python\n{code}\n```"}
                   for p, code in zip(problems, (right, wrong), strict=True)]
    verdicts = [{"id": problems[0].problem_id, "passed": {"strict": True}, **RAN},
                {"id": problems[1].problem_id, "passed": {"strict": False}, **RAN}]
    (tmp_path / "completions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in completions))
    (tmp_path / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    assert _miss_anatomy(tmp_path, problems, "gurobipy") == {"numbers copied wrong": 1}


def test_data_read_past_a_key_list_taken_from_a_dict() -> None:
    """``keys = list(d)`` (how the renderer writes a sparse table's key list) is data, not the model's first call: the
    scan reads on to the assignments after it, and the list holds the dict's names."""
    program = ('dist = {("A", "B"): 4, ("B", "C"): 7}\ntravel_keys = list(dist)\ncap = {"A": 3}\n'
               'm = gp.Model("x")\nlate = {"Z": 1}\n')
    data = data_literals(program)
    assert data is not None and data["travel_keys"] == (["A", "B", "B", "C"], [])
    assert "cap" in data and "m" not in data and "late" not in data
    # any other call still ends the data
    assert set(data_literals('a = {"A": 1}\nb = sorted(a)\nc = 2\n') or {}) == {"a"}
