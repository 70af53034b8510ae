"""Capability-boundary analysis of a policy: where each family's attempts fail (code, solver outcome, formulation).

A pure function over stored rows, so ``flywheel stats`` and reports can call it on whatever query feeds them. Each
row is one attempt: ``family``, ``exec_status`` (an ``ExecStatus`` value, or None when not executed) and
``verdicts`` (contract name -> outcome: pass / fail / skip / contract_error), optionally ``accepted``.

An attempt's failure is the first one along the pipeline: infrastructure, then code (the program did not run to a
solve), then solver outcome (it solved but the solver status is not the verified one), then formulation (a
status / objective / feasibility check against the ground truth failed), then code checks that only contracts see
(hard-coded answer, wrong API). Infrastructure never counts against the model: it is excluded from the rates.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from solvers.records import ExecStatus

CATEGORIES = ("pass", "code", "solver", "formulation", "infra")

INFRA_STATUS = {ExecStatus.SANDBOX_ERROR, ExecStatus.LICENSE_LIMIT}
SOLVER_STATUS = {ExecStatus.SOLVER_INFEASIBLE, ExecStatus.SOLVER_UNBOUNDED, ExecStatus.SOLVER_NUMERIC}
# Answer checks: a failure means the model (formulation) is wrong even though the program ran.
ANSWER_CONTRACTS = ("status_matches_ground_truth", "objective_matches", "feasible_on_reference")
# Checks on the program itself that only the contracts see.
CODE_CONTRACTS = ("has_code", "sanity", "executes", "solve_called", "uses_requested_api", "no_hardcoded_answer")


def classify(row: Mapping[str, Any]) -> tuple[str, str]:
    """(category, detail) of one attempt, e.g. ("code", "syntax_error") or ("formulation", "objective_matches")."""
    raw = row.get("exec_status")
    try:
        # Normalise: a plain string from the store and the enum member must compare (and hash) the same.
        status = ExecStatus(raw) if raw is not None else None
    except ValueError:
        return "code", str(raw)
    verdicts: Mapping[str, str] = row.get("verdicts") or {}
    failed = {name for name, outcome in verdicts.items() if str(outcome) == "fail"}
    if status in INFRA_STATUS:
        return "infra", str(status)
    if status is None and not verdicts:
        return "infra", "not_executed"
    if status is not None and status != ExecStatus.OK and status not in SOLVER_STATUS:
        return "code", str(status)
    if status in SOLVER_STATUS and verdicts.get("status_matches_ground_truth") != "pass":
        return "solver", str(status)  # infeasible / unbounded where the verified answer says otherwise
    for name in ANSWER_CONTRACTS:
        if name in failed:
            return "formulation", name
    for name in CODE_CONTRACTS:
        if name in failed:
            return "code", name
    if row.get("accepted") is False:
        return "formulation", next(iter(sorted(failed)), "rejected")
    return "pass", ""


def failure_taxonomy(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per family (and a final ``all`` row): attempts, counts per category, the model's pass rate
    (infrastructure excluded) and the three most common failure details."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    details: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        category, detail = classify(row)
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
