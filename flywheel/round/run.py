"""Run (or resume) a round: find it by its plan's hash, run the pending work of each stage, record its events."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flywheel.round.check import stage_contracts
from flywheel.round.context import RoundContext, Stage, now
from flywheel.round.execute import pending_attempts, stage_execute
from flywheel.round.generate import stage_generate
from flywheel.round.plan import RoundPlan
from flywheel.round.policy import stage_policy
from flywheel.round.summary import rejections_by_contract, summarize
from flywheel.store import Store
from flywheel.store.lineage import environment
from solvers.records import canonical_json

STAGES: dict[str, Stage] = {"generate": stage_generate, "policy": stage_policy, "execute": stage_execute,
                            "contracts": stage_contracts}


@dataclass
class RoundOutcome:
    round: int
    status: str  # new | resumed | complete (nothing left to do)
    summary: list[dict[str, Any]]
    notes: list[str]
    seconds: float
    rejected_by: dict[str, int] = field(default_factory=dict)  # contract -> samples it rejected in this round


def find_round(store: Store, plan: RoundPlan) -> tuple[int, str]:
    """The round this plan belongs to: an existing one with the same config hash, or the next free number."""
    rows = store.query("SELECT round, status FROM rounds WHERE config_hash = ? ORDER BY round DESC LIMIT 1",
                       [plan.config_hash]).to_pylist()
    if rows:
        return int(rows[0]["round"]), ("finished" if rows[0]["status"] == "finished" else "incomplete")
    last = store.scalar("SELECT max(round) FROM round_events")
    return (int(last) + 1 if last is not None else 1), "new"


def run_round(store: Store, plan: RoundPlan, workers: int | None = None,
              progress: Callable[[str, int], None] | None = None,
              set_total: Callable[[str, int], None] | None = None,
              stages: Iterable[str] | None = None) -> RoundOutcome:
    """Run (or resume) the round of ``plan``; holds the store's writer lock throughout."""
    start = time.monotonic()
    from solvers.sandbox import default_workers  # one definition of "the cores"

    workers = workers or default_workers()
    with store.lock():
        round_id, state = find_round(store, plan)
        ctx = RoundContext(store, plan, round_id, workers, progress or (lambda s, n: None),
                           set_total or (lambda s, n: None))
        if state == "finished" and not _has_pending(store, plan, round_id):
            return RoundOutcome(round_id, "complete", summarize(store, round_id), [], time.monotonic() - start,
                                rejections_by_contract(store, round_id))
        event = "started" if state == "new" else "resumed"
        store.write("round_events", round_id, [_event(plan, event)])
        for name in stages or STAGES:
            for _ in STAGES[name](ctx):
                pass
        store.compact(round_id)  # the small resumable commits of this round -> one part per table
        summary = summarize(store, round_id)
        store.write("round_events", round_id, [{**_event(plan, "finished"),
                                                "summary_json": json.dumps(summary, default=str)}])
    return RoundOutcome(round_id, "new" if state == "new" else "resumed", summary, ctx.notes,
                        time.monotonic() - start, rejections_by_contract(store, round_id))



def _has_pending(store: Store, plan: RoundPlan, round_id: int) -> bool:
    """Work a finished round may still have: attempts whose execution hit infrastructure errors, and policy
    samples whose requests failed."""
    if pending_attempts(store, round_id):
        return True
    if plan.policy is None:
        return False
    short = store.scalar(
        """SELECT count(*) FROM round_items i WHERE i.round = $r AND (SELECT count(*) FROM attempts a
           WHERE a.problem_id = i.problem_id AND a.policy = $policy) < $k""",
        {"r": round_id, "policy": plan.policy, "k": plan.samples})
    return bool(short)


def _event(plan: RoundPlan, event: str) -> dict[str, Any]:
    return {"event": event, "event_at": now(), "config_hash": plan.config_hash,
            "config_json": canonical_json(plan.to_json()), "env_json": canonical_json(environment()),
            "command": " ".join(sys.argv)[:1000]}
