"""Stage ``contracts``: run the round's suite over every executed sample that has no verdict from it yet."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from contracts.suites import load_suite, suite_names
from flywheel.round.context import RoundContext, commit_every
from flywheel.round.execute import sandbox_config
from flywheel.store.rows import load_samples


def resolve_suite(name: str | None, notes: list[str] | None = None) -> Any | None:
    """The contract suite to run, or None when none is asked for and no default suite is registered (then the
    stage is skipped, with a note saying why). A suite asked for by name must load."""
    if name is not None:
        return load_suite(name)
    if "default" not in suite_names():
        if notes is not None:
            notes.append("contracts: no 'default' suite registered; stage skipped")
        return None
    return load_suite("default")


def stage_contracts(ctx: RoundContext) -> Iterator[int]:
    """Run the suite over every executed sample of the round without verdicts from that suite. Hook: skipped
    (and said so in the summary) when the contracts package has no suite to run."""
    suite = resolve_suite(ctx.plan.suite, ctx.notes)
    if suite is None:
        return
    from contracts.engine import run_suite

    store, r = ctx.store, ctx.round
    rows = store.query(
        """
        WITH mine AS (SELECT attempt_id FROM round_items WHERE round = $r AND attempt_id IS NOT NULL
                      UNION SELECT attempt_id FROM attempts WHERE round = $r AND policy <> 'reference')
        SELECT attempt_id FROM mine JOIN executions USING (attempt_id)
        WHERE attempt_id NOT IN (SELECT attempt_id FROM verdicts WHERE suite = $s)
        ORDER BY attempt_id
        """, {"r": r, "s": suite.name}).to_pylist()  # type: ignore[arg-type]
    done = int(store.scalar("SELECT count(DISTINCT attempt_id) FROM verdicts WHERE round = ? AND suite = ?",
                            [r, suite.name]) or 0)
    ctx.set_total("contracts", done + len(rows))
    ctx.advance("contracts", done)
    ids = [x["attempt_id"] for x in rows]
    step = 4 * commit_every(done + len(ids))
    for start in range(0, len(ids), step):
        chunk = ids[start:start + step]
        samples = load_samples(store, chunk)
        # Threads, not processes: contracts spend their time in solvers, which release the GIL.
        report = run_suite(suite, samples, round=r, executor=_executor(ctx), workers=ctx.workers)
        if report.repairs:
            store.write("repairs", r, [x.model_dump() for x in report.repairs])
        if report.disputes:
            store.write("disputes", r, [d.model_dump() for d in report.disputes])
        store.write("verdicts", r, [{**v.model_dump(), "round": r} for v in report.verdicts])
        ctx.advance("contracts", len(chunk))
        yield len(chunk)


def _executor(ctx: RoundContext) -> Callable[[Sequence[Any]], list[Any]]:
    from solvers.sandbox import Program, run_batch

    config = sandbox_config(ctx.plan)

    def run(attempts: Sequence[Any]) -> list[Any]:
        return list(run_batch([Program(program_id=a.attempt_id, code=a.code) for a in attempts], config,
                              workers=ctx.workers))

    return run
