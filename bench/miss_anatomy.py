"""What a fine-tuned policy's held-out misses get wrong, read off its program against the reference program.

The demo's miss classes (code / formulation / solver outcome) say where a program failed; this says what it got
wrong. Each missed item's data literals (everything assigned before the model is built: entity lists, 1-D dicts,
row tables) are compared with the reference program of the same problem (the demo's weight-0 held-out shard):

- ``build error``: the program did not run to a solve (the error's type and message head);
- ``entities``: its entity lists hold other names than the reference (a name dropped, or a table header such as
  "Supply (MWh)" taken for an entity);
- ``entity order``: the same names in another order (rows then zip onto the wrong columns);
- ``numbers copied wrong``: the same names, but numbers that the reference does not hold (a digit dropped, a row
  copied from its neighbour);
- ``numbers misplaced``: the reference's numbers, in other places (two rows or two columns swapped);
- ``model``: the data equal the reference's, the miss is in the constraints or the objective.

    python bench/miss_anatomy.py --work runs/speedrun-v2-150/seed0 runs/speedrun-v2-150/seed1 --name speedrun_v2_150

Writes bench/results/miss_anatomy_<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench._machine import machine  # noqa: E402
from contracts.extract import extract_code  # noqa: E402

RESULTS = ROOT / "bench" / "results"
CLASSES = ("build error", "entities", "entity order", "numbers copied wrong", "numbers misplaced", "model")


def data_literals(code: str) -> dict[str, tuple[list[str], list[float]]] | None:
    """Each data assignment's strings and numbers, in source order, by the name it assigns: the top-level
    assignments before the first call (``m = gp.Model(...)``, ``model = pyo.ConcreteModel()``, ...); None when the
    program does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    data: dict[str, tuple[list[str], list[float]]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if not isinstance(node, ast.Assign) or isinstance(node.value, ast.Call):
            break
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
    keys = sorted(set(mine) | set(ref))
    for k in keys:
        have, want = set(mine.get(k, ([], []))[0]), set(ref.get(k, ([], []))[0])
        if have != want:
            return "entities", f"{k}: -{sorted(want - have)} +{sorted(have - want)}"[:60]
    if any(mine.get(k, ([], []))[0] != ref.get(k, ([], []))[0] for k in keys):
        return "entity order", next(k for k in keys if mine.get(k, ([], []))[0] != ref.get(k, ([], []))[0])
    all_mine = [x for k in keys for x in mine.get(k, ([], []))[1]]
    all_ref = [x for k in keys for x in ref.get(k, ([], []))[1]]
    if sorted(all_mine) != sorted(all_ref):
        wrong = sorted((Counter(all_mine) - Counter(all_ref)).elements())
        return "numbers copied wrong", f"{[int(x) if x.is_integer() else x for x in wrong][:6]}"
    if all_mine != all_ref:
        return "numbers misplaced", next(k for k in keys if mine.get(k, ([], []))[1] != ref.get(k, ([], []))[1])
    return "model", verdict.get("miss_class") or ""


def anatomy(work: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    refs = {r["problem_id"]: extract_code(r["messages"][-1]["content"]) or ""
            for r in pq.read_table(work / "shards" / "heldout" / "train.parquet").to_pylist()}
    rows = []
    for ev in sorted((work / "eval").iterdir()):
        completions = {json.loads(x)["id"]: json.loads(x) for x in (ev / "completions.jsonl").open()}
        for line in (ev / "verdicts.jsonl").open():
            v = json.loads(line)
            if v["passed"]["strict"]:
                continue
            program = extract_code(completions[v["id"]]["completion"]) or ""
            kind, detail = classify(v, program, refs[v["id"]])
            rows.append({"work": str(work), "eval": ev.name, "id": v["id"], "family": v["benchmark"],
                         "class": kind, "detail": detail, "lenient": v["passed"]["orlm_lenient"]})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    families = sorted({r["family"] for r in rows})
    head = "| class | " + " | ".join(f[:12] for f in families) + " | all |"
    lines = [head, "|---|" + "---:|" * (len(families) + 1)]
    for c in CLASSES:
        n = [sum(r["class"] == c and r["family"] == f for r in rows) for f in families]
        lines.append(f"| {c} | " + " | ".join(map(str, n)) + f" | {sum(n)} |")
    lines.append("| **misses** | " + " | ".join(str(sum(r["family"] == f for r in rows)) for f in families)
                 + f" | {len(rows)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, nargs="+", required=True, help="demo work directories (with eval/, shards/)")
    ap.add_argument("--name", required=True, help="results file stem: bench/results/miss_anatomy_<name>")
    args = ap.parse_args()
    rows = [r for w in args.work for r in anatomy(w)]
    table = markdown(rows)
    result = {"bench": "miss_anatomy", "command": "python " + " ".join(sys.argv), "machine": machine(),
              "classes": dict(Counter(r["class"] for r in rows)), "misses": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"miss_anatomy_{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / f"miss_anatomy_{args.name}.md").write_text(table)
    print(table)
    for r in rows:
        print(f"{r['family'][:14]:<14} {r['class']:<21} {r['detail']}")


if __name__ == "__main__":
    main()
