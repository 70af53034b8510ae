"""What a fine-tuned policy's held-out misses get wrong, per demo run and over several runs at once.

Each missed item of every evaluation under ``WORK/eval/`` is classed by ``flywheel.evaluate.anatomy`` (its program's
data literals against the reference program of the same problem, from the demo's weight-0 held-out shard: build
error, entities, entity order, numbers copied wrong, numbers misplaced, model); this lists every miss with its detail
and counts the classes per family.

    python bench/miss_anatomy.py --work runs/speedrun-v2-150/seed0 runs/speedrun-v2-150/seed1 --name speedrun_v2_150

Writes bench/results/miss_anatomy_<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench._machine import machine  # noqa: E402
from contracts.extract import extract_code  # noqa: E402
from flywheel.evaluate.anatomy import CLASSES, classify  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def anatomy(work: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    refs = {r["problem_id"]: extract_code(r["messages"][-1]["content"]) or ""
            for r in pq.read_table(work / "shards" / "heldout" / "train.parquet").to_pylist()}
    rows = []
    for ev in sorted((work / "eval").iterdir()):
        completions = {c["id"]: c for c in map(json.loads, (ev / "completions.jsonl").open())}
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
