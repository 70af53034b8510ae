"""``flywheel stats``: the numbers a difficulty curriculum needs, straight from the store's views.

Pass rates by family x difficulty x policy x round (accepted, objective match, clean execution), how long programs
and their solver calls took, and the failure taxonomy per family: why the samples that were not accepted failed
(an execution status from the sandbox's taxonomy, or the contracts that rejected them). Difficulty is measured
too, not only the knob: pass rates by measured level (problem size, techniques, ground-truth solve time; see
``flywheel.generators._difficulty``) and by modelling technique.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flywheel.store import Store
from solvers.failures import failure_reasons

PASS_RATES_SQL = """
SELECT s.family, s.difficulty, s.policy, s.round,
       count(*) AS samples,
       count(*) FILTER (WHERE s.accepted) AS accepted,
       avg(CASE WHEN s.accepted THEN 1.0 ELSE 0.0 END) AS pass_rate,
       avg(CASE WHEN s.objective_match THEN 1.0 ELSE 0.0 END) AS objective_match_rate,
       avg(CASE WHEN s.exec_status = 'ok' THEN 1.0 ELSE 0.0 END) AS exec_ok_rate,
       median(s.wall_s) AS median_wall_s,
       quantile_cont(s.wall_s, 0.9) AS p90_wall_s,
       median(sv.solve_s) AS median_solve_s,
       median(p.gt_solve_ms) / 1000.0 AS median_ground_truth_solve_s
FROM samples s
LEFT JOIN (SELECT attempt_id, sum(solve_time_s) AS solve_s FROM solves GROUP BY attempt_id) sv USING (attempt_id)
LEFT JOIN (SELECT problem_id, gt_solve_ms FROM problems) p USING (problem_id)
GROUP BY s.family, s.difficulty, s.policy, s.round
ORDER BY s.family, s.difficulty, s.policy, s.round
"""

# The curriculum's axis: the measured level (1..5) of each problem, next to the knob it was generated at.
MEASURED_SQL = """
SELECT s.policy, s.measured_level,
       count(*) AS samples,
       avg(CASE WHEN s.accepted THEN 1.0 ELSE 0.0 END) AS pass_rate,
       avg(s.difficulty) AS mean_knob,
       avg(s.measured_difficulty) AS mean_measured,
       avg(s.n_techniques) AS mean_techniques
FROM samples s
WHERE s.measured_level IS NOT NULL
GROUP BY s.policy, s.measured_level
ORDER BY s.policy, s.measured_level
"""

TECHNIQUE_SQL = """
SELECT s.policy, t.technique, count(*) AS samples,
       avg(CASE WHEN s.accepted THEN 1.0 ELSE 0.0 END) AS pass_rate
FROM samples s, unnest(s.techniques) AS t(technique)
GROUP BY s.policy, t.technique
ORDER BY s.policy, t.technique
"""

BOUNDARY_SQL = """
SELECT s.attempt_id, s.family, s.policy, s.exec_status, s.accepted, s.disputed,
       list(v.contract ORDER BY v.contract) FILTER (WHERE v.contract IS NOT NULL) AS contracts,
       list(v.outcome ORDER BY v.contract) FILTER (WHERE v.contract IS NOT NULL) AS outcomes
FROM samples s LEFT JOIN verdicts v USING (attempt_id)
GROUP BY ALL
"""


def sample_rows(store: Store) -> list[dict[str, Any]]:
    """One row per sample with its ``verdicts`` (contract -> outcome): what ``solvers.failures`` classifies."""
    rows = store.query(BOUNDARY_SQL).to_pylist()
    return [{**r, "verdicts": dict(zip(r["contracts"] or [], r["outcomes"] or [], strict=True))} for r in rows]


def failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per family, why the samples that were not accepted failed (``failure_reasons``: an execution status, every
    contract that rejected it, ``disputed`` or ``unjudged``; a sample rejected by two contracts counts under both),
    with each reason's share of the family's samples."""
    totals = Counter(r["family"] for r in rows)
    counts = Counter((r["family"], reason) for r in rows if not r["accepted"] for reason in failure_reasons(r))
    ordered = sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
    return [{"family": family, "reason": reason, "count": n, "share_of_family": n / totals[family]}
            for (family, reason), n in ordered]


def capability_boundary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per policy and family: where attempts fail (code, solver outcome, formulation, infrastructure)."""
    from flywheel.policies.boundary import failure_taxonomy

    by_policy: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_policy.setdefault(r["policy"], []).append(r)
    return [{"policy": policy, **row} for policy in sorted(by_policy) for row in failure_taxonomy(by_policy[policy])]


def compute_stats(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Five tables as lists of rows: ``pass_rates``, ``by_measured_level``, ``by_technique``, ``failures`` and
    ``capability_boundary``; the last two classify the same sample rows the same way (``solvers.failures``)."""
    rows = sample_rows(store)
    return {
        "pass_rates": store.query(PASS_RATES_SQL).to_pylist(),
        "by_measured_level": store.query(MEASURED_SQL).to_pylist(),
        "by_technique": store.query(TECHNIQUE_SQL).to_pylist(),
        "failures": failures(rows),
        "capability_boundary": capability_boundary(rows),
    }
