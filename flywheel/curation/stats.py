"""``flywheel stats``: the numbers a difficulty curriculum needs, straight from the store's views.

Pass rates by family x difficulty x policy x round (accepted, objective match, clean execution), how long programs
and their solver calls took, and the failure taxonomy per family: why the samples that were not accepted failed
(an execution status from the sandbox's taxonomy, or the contracts that rejected them).
"""

from __future__ import annotations

from typing import Any

from flywheel.store import Store

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

# A sample that was not accepted fails for one reason per row here: its execution status if the program did not
# run cleanly, else each contract that rejected it (a sample rejected by two contracts counts under both), else
# "disputed" (ground truth in doubt) or "unjudged" (no verdicts yet).
FAILURES_SQL = """
WITH failed AS (
    SELECT family, exec_status, failed_contracts, disputed FROM samples WHERE NOT coalesce(accepted, false)
), reasons AS (
    SELECT family, 'exec:' || exec_status AS reason FROM failed WHERE exec_status IS NOT NULL AND exec_status <> 'ok'
    UNION ALL
    SELECT family, 'not_executed' FROM failed WHERE exec_status IS NULL
    UNION ALL
    SELECT family, 'contract:' || unnest(string_split(failed_contracts, ',')) FROM failed
        WHERE exec_status = 'ok' AND failed_contracts IS NOT NULL
    UNION ALL
    SELECT family, CASE WHEN disputed THEN 'disputed' ELSE 'unjudged' END FROM failed
        WHERE exec_status = 'ok' AND failed_contracts IS NULL
), totals AS (SELECT family, count(*) AS samples FROM samples GROUP BY family)
SELECT r.family, r.reason, count(*) AS count, count(*) / any_value(t.samples) AS share_of_family
FROM reasons r JOIN totals t USING (family)
GROUP BY r.family, r.reason
ORDER BY r.family, count DESC, r.reason
"""


BOUNDARY_SQL = """
SELECT s.attempt_id, s.family, s.policy, s.exec_status, s.accepted,
       list(v.contract ORDER BY v.contract) FILTER (WHERE v.contract IS NOT NULL) AS contracts,
       list(v.outcome ORDER BY v.contract) FILTER (WHERE v.contract IS NOT NULL) AS outcomes
FROM samples s LEFT JOIN verdicts v USING (attempt_id)
GROUP BY ALL
"""


def capability_boundary(store: Store) -> list[dict[str, Any]]:
    """Per policy and family: where attempts fail (code, solver outcome, formulation, infrastructure)."""
    from flywheel.policies.boundary import failure_taxonomy

    by_policy: dict[str, list[dict[str, Any]]] = {}
    for r in store.query(BOUNDARY_SQL).to_pylist():
        verdicts = dict(zip(r["contracts"] or [], r["outcomes"] or [], strict=True))
        by_policy.setdefault(r["policy"], []).append({**r, "verdicts": verdicts})
    return [{"policy": policy, **row} for policy in sorted(by_policy) for row in failure_taxonomy(by_policy[policy])]


def compute_stats(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Three tables as lists of rows: ``pass_rates``, ``failures`` and ``capability_boundary``."""
    return {
        "pass_rates": store.query(PASS_RATES_SQL).to_pylist(),
        "failures": store.query(FAILURES_SQL).to_pylist(),
        "capability_boundary": capability_boundary(store),
    }
