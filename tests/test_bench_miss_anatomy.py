"""``bench/miss_anatomy.py``: each kind of wrong program, made from a real reference program, lands in its class."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.miss_anatomy import classify, data_literals  # noqa: E402
from flywheel.generators.base import generate_problem  # noqa: E402
from solvers.render import render  # noqa: E402

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
