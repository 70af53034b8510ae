"""What a missed program gets wrong, read off its data against the reference program of the same problem.

The evaluation's miss classes (code / formulation / solver outcome) say where a program failed; this says what it
got wrong. A missed program's data literals (everything assigned before the model is built: entity lists, 1-D
dicts, row tables) are compared with the reference program's, assignment by assignment:

- ``build error``: the program did not reach a solve (the error's type);
- ``entities``: an assignment holds other names than the reference's (a name dropped, a table header such as
  "Supply (MWh)" taken for an entity, a table keyed by the other dimension);
- ``entity order``: the same names in another order (rows then zip onto the wrong columns);
- ``numbers copied wrong``: the same names, numbers the reference does not hold (a digit dropped, a row copied
  from its neighbour);
- ``numbers misplaced``: the reference's numbers in other places (two rows or columns swapped);
- ``model``: the data equal the reference's; the miss is in the constraints or the objective.

A program that solved to another status (infeasible, say) is compared too: its data say why.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

CLASSES = ("build error", "entities", "entity order", "numbers copied wrong", "numbers misplaced", "model")


def data_literals(code: str) -> dict[str, tuple[list[str], list[float]]] | None:
    """Each data assignment's strings and numbers, in source order, by the name it assigns: the top-level
    assignments before the first call (``m = gp.Model(...)``, ``model = pyo.ConcreteModel()``, ...) other than
    ``list(d)`` of an earlier one (a key list written as a dict's keys: its names); None when the program does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    data: dict[str, tuple[list[str], list[float]]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if not isinstance(node, ast.Assign):
            break
        if isinstance(node.value, ast.Call):
            # ``travel_keys = list(dist)``: a key list written as a dict's keys (the renderer's sparse tables) holds
            # that dict's names; any other call builds the model and ends the data
            call = node.value
            if not (isinstance(call.func, ast.Name) and call.func.id == "list" and len(call.args) == 1
                    and not call.keywords and isinstance(call.args[0], ast.Name) and call.args[0].id in data):
                break
            data[ast.unparse(node.targets[0])] = (list(data[call.args[0].id][0]), [])
            continue
        names: list[str] = []
        numbers: list[float] = []
        for sub in ast.walk(node.value):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                names.append(sub.value)
            elif isinstance(sub, ast.Constant) and type(sub.value) in (int, float):
                numbers.append(float(sub.value))
        data[ast.unparse(node.targets[0])] = (names, numbers)
    return data


def classify(verdict: dict[str, Any], program: str, reference: str) -> tuple[str, str]:
    """(class, detail) of one missed item; a program that reached a solve (an infeasible one included) is compared
    with the reference, assignment by assignment."""
    mine, ref = data_literals(program), data_literals(reference)
    if verdict.get("solve_status") is None or mine is None or ref is None:
        return "build error", (verdict.get("error") or verdict["exec_status"]).split(":")[0][:40]
    none: tuple[list[str], list[float]] = ([], [])
    pairs = [(k, mine.get(k, none), ref.get(k, none)) for k in sorted(set(mine) | set(ref))]
    for k, (have, _), (want, _) in pairs:
        if set(have) != set(want):
            return "entities", f"{k}: -{sorted(set(want) - set(have))} +{sorted(set(have) - set(want))}"[:60]
    reordered = next((k for k, (have, _), (want, _) in pairs if have != want), None)
    if reordered:
        return "entity order", reordered
    all_mine = [x for _, (_, numbers), _ in pairs for x in numbers]
    all_ref = [x for _, _, (_, numbers) in pairs for x in numbers]
    if sorted(all_mine) != sorted(all_ref):
        wrong = sorted((Counter(all_mine) - Counter(all_ref)).elements())
        return "numbers copied wrong", f"{[int(x) if x.is_integer() else x for x in wrong][:6]}"
    misplaced = next((k for k, (_, have), (_, want) in pairs if have != want), None)
    if misplaced:
        return "numbers misplaced", misplaced
    return "model", verdict.get("miss_class") or ""


def miss_anatomy(verdicts: list[dict[str, Any]], programs: dict[str, str], references: dict[str, str]
                 ) -> dict[str, int]:
    """Counts per class over the strict misses among ``verdicts`` (``flywheel eval score`` rows), each program and
    reference looked up by the verdict's ``id``; classes with no miss are left out."""
    counts = Counter(classify(v, programs.get(v["id"], ""), references.get(v["id"], ""))[0]
                     for v in verdicts if not v["passed"].get("strict"))
    return {c: counts[c] for c in CLASSES if counts[c]}
