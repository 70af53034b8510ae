"""What a round produced, from the store: per-family counts for the summary table, rejections per contract."""

from __future__ import annotations

from typing import Any

from flywheel.store import Store


def rejections_by_contract(store: Store, round_id: int) -> dict[str, int]:
    """How many of the round's samples each reject-severity contract failed (a sample may fail several)."""
    rows = store.query(
        """
        SELECT v.contract, count(DISTINCT v.attempt_id) AS n
        FROM verdicts v JOIN attempts a USING (attempt_id)
        WHERE a.round = ? AND v.severity = 'reject' AND v.outcome = 'fail'
        GROUP BY 1 ORDER BY 2 DESC, 1
        """, [round_id]).to_pylist()
    return {r["contract"]: r["n"] for r in rows}



def summarize(store: Store, round_id: int) -> list[dict[str, Any]]:
    """Per family: generated, verified, disputed, infeasible, reproduced, median ground-truth solve ms, and
    accepted / rejected when contracts ran."""
    rows = store.query(
        """
        SELECT i.family,
               count(*) AS generated,
               count(*) FILTER (WHERE p.gt_status IN ('optimal', 'infeasible', 'unbounded') AND NOT p.disputed)
                   AS verified,
               count(*) FILTER (WHERE p.disputed) AS disputed,
               count(*) FILTER (WHERE p.gt_status = 'infeasible') AS infeasible,
               count(s.attempt_id) FILTER (WHERE s.exec_status IS NOT NULL) AS executed,
               count(*) FILTER (WHERE s.objective_match) AS reproduced,
               median(p.gt_solve_ms) AS median_solve_ms,
               count(*) FILTER (WHERE s.accepted) AS accepted,
               count(*) FILTER (WHERE s.accepted = false) AS rejected,
               count(*) FILTER (WHERE s.n_verdicts IS NOT NULL) AS checked
        FROM round_items i JOIN problems p USING (problem_id)
        LEFT JOIN samples s ON s.attempt_id = i.attempt_id
        WHERE i.round = ?
        GROUP BY 1 ORDER BY 1
        """, [round_id]).to_pylist()
    policy = {r["family"]: r for r in store.query(
        """
        SELECT family, count(*) AS samples, count(*) FILTER (WHERE exec_status = 'ok') AS policy_ran_ok,
               count(*) FILTER (WHERE objective_match) AS policy_correct,
               count(*) FILTER (WHERE accepted) AS policy_accepted,
               avg(coalesce(accepted, objective_match, false)::INT) AS pass_at_1,
               count(DISTINCT problem_id) FILTER (WHERE coalesce(accepted, objective_match, false))
                   / count(DISTINCT problem_id) AS pass_at_k
        FROM samples WHERE round = ? AND policy <> 'reference' GROUP BY 1
        """, [round_id]).to_pylist()}
    for row in rows:
        if policy:
            extra = policy.get(row["family"], {})
            row.update({k: extra.get(k, 0) for k in ("samples", "policy_ran_ok", "policy_correct",
                                                     "policy_accepted", "pass_at_1", "pass_at_k")})
    return rows
