"""Structural hash under shuffled copies: how often a renamed, reordered, row-scaled, sense-flipped copy of a
generator model hashes apart from the model (a dedup and decontamination miss), and how often distinct instances
collide.

The canonical form undoes row and column scaling by a ridge least squares on the logs of the coefficients
(``contracts.equivalence.canonical._scale_columns``). The ridge term is not invariant under row scaling, so in a
weakly anchored direction it pulls a model and its copy apart (1e-11 to 1e-5 relative) and a 9-digit label can
fall either side of its rounding. Baseline in the same run: the solve without refinement (``_REFINE_STEPS = 0``,
the canonical form of hasher "contracts-3"); against it, the proximal refinement steps now on both paths.

    .venv/bin/python bench/structural_hash.py [--seeds 40] [--copies 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from rich.progress import track

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contracts.equivalence.canonical as canonical  # noqa: E402
from bench._machine import machine, versions  # noqa: E402
from flywheel.curation.structural import DEFAULT_HASHER, structural_hash  # noqa: E402
from flywheel.generators.base import family_names, generate_problem  # noqa: E402
from tests.support.perturb import shuffled_model  # noqa: E402


def measure(pairs: list, refine_steps: int) -> dict:
    saved = canonical._REFINE_STEPS
    canonical._REFINE_STEPS = refine_steps
    try:
        misses: list[tuple[str, int, int]] = []
        hashes: dict[str, set[tuple[str, int]]] = {}
        times: list[float] = []
        for family, seed, model, copies in track(pairs, description=f"refine steps {refine_steps}"):
            t0 = time.perf_counter()
            h = structural_hash(model)
            times.append(time.perf_counter() - t0)
            hashes.setdefault(h, set()).add((family, seed))
            misses += [(family, seed, k) for k, copy in enumerate(copies) if structural_hash(copy) != h]
    finally:
        canonical._REFINE_STEPS = saved
    n_copies = sum(len(c) for *_, c in pairs)
    return {"refine_steps": refine_steps, "copies": n_copies, "misses": len(misses),
            "miss_rate": len(misses) / n_copies, "collisions": sum(len(v) - 1 for v in hashes.values()),
            "median_ms": statistics.median(times) * 1e3, "miss_families": dict(Counter(f for f, _, _ in misses)),
            "missed": misses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=40, help="seeds per family (difficulty 2 + seed % 3)")
    ap.add_argument("--copies", type=int, default=2, help="shuffled copies per instance")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "structural_hash.json")
    args = ap.parse_args()

    pairs = []
    for family in track(family_names(), description="generating"):
        for seed in range(args.seeds):
            model = generate_problem(family, seed, 2 + seed % 3, 0.0).ir
            pairs.append((family, seed, model, [shuffled_model(model, seed * 7 + k) for k in range(args.copies)]))
    runs = [measure(pairs, 0), measure(pairs, canonical._REFINE_STEPS)]
    print(f"{len(pairs)} instances over {len(family_names())} families, {args.copies} shuffled copies each")
    print(f"{'solve':28} {'copies':>6} {'misses':>6} {'rate':>7} {'collide':>7} {'ms/hash':>7}")
    for run, label in zip(runs, ("ridge, no refinement step", f"ridge + {runs[1]['refine_steps']} refinements"),
                          strict=True):
        print(f"{label:28} {run['copies']:6d} {run['misses']:6d} {run['miss_rate']:7.2%} {run['collisions']:7d} "
              f"{run['median_ms']:7.2f}")
    for run in runs:
        if run["miss_families"]:
            print(f"refine {run['refine_steps']}: misses by family: "
                  + ", ".join(f"{f} {n}" for f, n in sorted(run["miss_families"].items())))
    info = {**machine(), **versions("numpy", "scipy"), "date": datetime.now(UTC).isoformat()}
    args.out.write_text(json.dumps({"bench": "structural_hash", "hasher": DEFAULT_HASHER, "seeds": args.seeds,
                                    "families": len(family_names()), "runs": runs, "machine": info}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
