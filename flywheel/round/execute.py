"""Stage ``execute``: run every attempt of the round that has no execution (reference programs and policy samples,
whoever wrote them) in the sandbox; an execution row, written last, marks its attempt done."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from flywheel.round.context import COMMIT_SECONDS, RoundContext, commit_every, infra_error_row
from flywheel.round.plan import RoundPlan
from flywheel.store import Store
from flywheel.store.rows import execution_row, solve_rows


def pending_attempts(store: Store, round: int) -> list[dict[str, Any]]:
    """Attempts of ``round`` (its reference programs and any policy samples) not executed yet, in item order."""
    return store.query(
        """
        WITH mine AS (
            SELECT attempt_id, idx AS ord FROM round_items WHERE round = $r AND attempt_id IS NOT NULL
            UNION ALL
            SELECT attempt_id, 1e12 + sample_index AS ord FROM attempts WHERE round = $r AND policy <> 'reference'
        )
        SELECT a.attempt_id, a.code, a.api, min(m.ord) AS ord
        FROM mine m JOIN attempts a USING (attempt_id)
        WHERE a.attempt_id NOT IN (SELECT attempt_id FROM executions)
        GROUP BY ALL ORDER BY ord, a.attempt_id
        """, {"r": round}).to_pylist()


def sandbox_config(plan: RoundPlan) -> Any:
    """The sandbox settings of the round's config: its programs and the contracts' re-runs get the same limits."""
    from solvers.sandbox import SandboxConfig
    from solvers.sandbox.program import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S

    s = plan.sandbox
    kwargs: dict[str, Any] = {"timeout_s": s.get("timeout_s", DEFAULT_TIMEOUT_S),
                              "memory_mb": s.get("memory_mb", DEFAULT_MEMORY_MB)}
    if s.get("cpu_s") is not None:
        kwargs["cpu_s"] = max(1, int(round(s["cpu_s"])))
    if s.get("license_file"):
        kwargs["license_files"] = {"GRB_LICENSE_FILE": s["license_file"]}
    kwargs["backend"], kwargs["ray_address"] = s.get("backend", "local"), s.get("address")  # [sandbox] placement
    return SandboxConfig(**kwargs)


def stage_execute(ctx: RoundContext) -> Iterator[int]:
    store = ctx.store
    pending = pending_attempts(store, ctx.round)
    total = int(store.scalar("SELECT count(attempt_id) FROM round_items WHERE round = ?", [ctx.round]) or 0)
    total += int(store.scalar("SELECT count(*) FROM attempts WHERE round = ? AND policy <> 'reference'",
                              [ctx.round]) or 0)
    ctx.set_total("execute", total)
    ctx.advance("execute", total - len(pending))
    if not pending:
        return
    from solvers.sandbox import Program, run_batch

    config = sandbox_config(ctx.plan)
    programs = [Program(program_id=p["attempt_id"], code=p["code"] or "") for p in pending]
    batch: list[tuple[str, Any]] = []
    last = time.monotonic()
    for p, execution in zip(pending, run_batch(programs, config, workers=ctx.workers), strict=True):
        batch.append((p["attempt_id"], execution))
        ctx.advance("execute", 1)
        if len(batch) >= commit_every(total) or time.monotonic() - last > COMMIT_SECONDS:
            _commit_executed(ctx, batch)
            yield len(batch)
            batch, last = [], time.monotonic()
    if batch:
        _commit_executed(ctx, batch)
        yield len(batch)


def _commit_executed(ctx: RoundContext, batch: list[tuple[str, Any]]) -> None:
    """Solves first, executions last (an execution row marks its attempt done). A ``sandbox_error`` after the
    sandbox's own retries is infrastructure: logged in infra_errors, not stored as an execution, so the next run
    of the same command retries it instead of counting it against the program."""
    r, store = ctx.round, ctx.store
    ok = [(a, e) for a, e in batch if e.status.value != "sandbox_error"]
    infra = [(a, e) for a, e in batch if e.status.value == "sandbox_error"]
    solves = [row for a, e in ok for row in solve_rows(a, e)]
    if solves:
        store.write("solves", r, solves)
    if infra:
        store.write("infra_errors", r, [infra_error_row([r, a, e.error, time.time()], "execute", "sandbox_error",
                                                        e.error, attempt_id=a) for a, e in infra])
        ctx.notes.append(f"{len(infra)} sandbox infrastructure error(s); rerun the same command to retry them")
    if ok:
        store.write("executions", r, [execution_row(a, e) for a, e in ok])

