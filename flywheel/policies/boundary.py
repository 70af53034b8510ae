"""Capability-boundary analysis of a policy: where each family's attempts fail (code, solver outcome, formulation).

A pure function over stored rows, so ``flywheel stats`` and reports can call it on whatever query feeds them. Each
row is one attempt: ``family``, ``exec_status`` (an ``ExecStatus`` value, or None when not executed) and
``verdicts`` (contract name -> outcome: pass / fail / skip / contract_error), optionally ``accepted``.

An attempt's failure is the first one along the pipeline (``solvers.failures.classify_failure``, the one
classification): infrastructure, then code (the program did not run to a solve), then solver outcome (the solve
ended without the verified answer), then formulation (a status / objective / feasibility check against the ground
truth failed), then code checks that only contracts see (hard-coded answer, wrong API). Infrastructure never counts
against the model: it is excluded from the rates.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from solvers.failures import CATEGORIES, classify_failure


def failure_taxonomy(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per family (and a final ``all`` row): attempts, counts per category, the model's pass rate
    (infrastructure excluded) and the three most common failure details."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    details: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        category, detail = classify_failure(row)
        for fam in (str(row.get("family", "?")), "all"):
            counts[fam][category] += 1
            if category != "pass":
                details[fam][f"{category}:{detail}"] += 1
    table = []
    for fam in sorted(counts, key=lambda f: (f == "all", f)):
        c = counts[fam]
        judged = sum(c[k] for k in CATEGORIES if k != "infra")
        table.append({"family": fam, "attempts": sum(c.values()), **{k: c[k] for k in CATEGORIES},
                      "pass_rate": round(c["pass"] / judged, 4) if judged else None,
                      "top_failures": ", ".join(f"{d} ({n})" for d, n in details[fam].most_common(3))})
    return table
