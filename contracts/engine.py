"""The engine: run a suite over samples, record one verdict row per sample x contract.

Order within a sample: answer-blind repairs first (run in a jailed process that receives only the
``BlindSample``, batched over the round), then before-execution checks cheapest first, then (once the
sandbox has run the possibly repaired program) after-execution checks cheapest first. Checks from user contract files
run in the jailed processes too (``contracts.blind``), batched per stage over the samples still in play; their
verdicts are then recorded in the same order as every other check's. The first failing
``reject`` contract short-circuits the rest, which are recorded as ``skip`` rows naming it. A contract that raises
becomes a ``contract_error`` row and the run goes on; it never rejects a sample on its own, so one broken user
contract cannot empty a round.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from contracts.api import Contract, Outcome, Repair, Severity, Stage, Verdict
from contracts.blind import is_user, run_checks, run_repairs
from contracts.sample import Sample, with_code
from contracts.suites import Suite
from contracts.verdicts import DisputeRow, RepairRecord, VerdictRow, evidence_json, verdict_id
from solvers.records import Attempt, ExecStatus, Execution, canonical_json, content_hash

# Runs a batch of attempts (in order) and returns their executions. The default is the sandbox.
Executor = Callable[[Sequence[Attempt]], list[Execution]]

ACCEPTED, REJECTED, DISPUTED = "accepted", "rejected", "disputed"
# The sandbox failed or the solver licence refused the model (not the program's doing): nothing after execution
# can be judged, and nothing is held against the sample.
INFRA_ERROR = "infra_error"
NOT_THE_PROGRAM = {ExecStatus.SANDBOX_ERROR, ExecStatus.LICENSE_LIMIT}


@dataclass
class SampleResult:
    """Everything the engine concluded about one sample; ``sample`` is the final (repaired, executed) one."""

    sample: Sample
    status: str = ACCEPTED
    rejected_by: str | None = None
    verdicts: list[VerdictRow] = field(default_factory=list)
    repairs: list[RepairRecord] = field(default_factory=list)
    disputes: list[DisputeRow] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


@dataclass
class SuiteReport:
    suite: str
    results: list[SampleResult]

    @property
    def verdicts(self) -> list[VerdictRow]:
        return [v for r in self.results for v in r.verdicts]

    @property
    def repairs(self) -> list[RepairRecord]:
        return [x for r in self.results for x in r.repairs]

    @property
    def disputes(self) -> list[DisputeRow]:
        return [d for r in self.results for d in r.disputes]

    def verdict_rows(self) -> list[dict[str, Any]]:
        """Plain dicts for the store's ``verdicts`` table."""
        return [v.model_dump() for v in self.verdicts]

    def summary(self) -> dict[str, Any]:
        """Counts with and without repairs: a repaired sample that passes counts only in ``accepted``."""
        status = Counter(r.status for r in self.results)
        return {
            "suite": self.suite,
            "samples": len(self.results),
            "accepted": status[ACCEPTED],
            "accepted_without_repairs": sum(r.status == ACCEPTED and not r.repaired for r in self.results),
            "repaired": sum(r.repaired for r in self.results),
            "rejected": status[REJECTED],
            "disputed": status[DISPUTED],
            "infra_errors": status[INFRA_ERROR],
            "rejected_by": dict(Counter(r.rejected_by for r in self.results if r.rejected_by)),
            "contract_errors": sum(v.outcome == Outcome.CONTRACT_ERROR for v in self.verdicts),
        }


def sandbox_executor(config: Any = None, workers: int | None = None) -> Executor:
    """The default executor: the sandbox's ``run_batch`` (order-preserving), one program per attempt."""

    def run(attempts: Sequence[Attempt]) -> list[Execution]:
        from solvers.sandbox import Program, run_batch

        programs = [Program(program_id=a.attempt_id, code=a.code) for a in attempts]
        return list(run_batch(programs, config, workers=workers))

    return run


def run_suite(
    suite: Suite,
    samples: Iterable[Sample],
    *,
    executor: Executor | None = None,
    round: int | None = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> SuiteReport:
    """Run ``suite`` over ``samples``; returns every verdict, repair and dispute plus the final samples.

    A sample whose code is unchanged and already carries an execution is not re-run. ``workers`` > 1 evaluates
    samples on a thread pool (worth it when contracts call solvers, which release the GIL).
    """
    ordered = _ordered(suite.contracts)
    before = [c for c in ordered if c.stage == Stage.BEFORE]
    after = [c for c in ordered if c.stage == Stage.AFTER]
    results = [SampleResult(sample=s) for s in samples]
    ctx = _Ctx(suite.name, round)

    repairs = [c for c in before if c.severity == Severity.REPAIR]
    if repairs and results:  # one batch per round, in a process that never holds the answer (contracts.blind)
        outcomes = run_repairs(repairs, [r.sample.blind() for r in results])
        for r, rows in zip(results, outcomes, strict=True):
            for c, (out, seconds, error) in zip(repairs, rows, strict=True):
                if error is not None:
                    _record(r, c, Verdict(outcome=Outcome.CONTRACT_ERROR, message=error), seconds, ctx)
                else:
                    _apply_repair(r, c, out, seconds, ctx)
    checks = [c for c in before if c.severity != Severity.REPAIR]
    ready = _user_checks(checks, [r for r in results if r.status != REJECTED])
    _map(lambda r: _run_stage(r, checks, ctx, ready), results, workers, progress)

    needs_run = [r for r in results if r.status != REJECTED and after and r.sample.execution is None]
    if needs_run:
        run = executor or sandbox_executor()
        executions = run([_with_extracted_code(r.sample).attempt for r in needs_run])
        for r, ex in zip(needs_run, executions, strict=True):
            r.sample = Sample(problem=r.sample.problem, attempt=_with_extracted_code(r.sample).attempt, execution=ex)

    ready = _user_checks(after, [r for r in results if r.status != REJECTED and not _not_the_program(r)])
    _map(lambda r: _run_stage(r, after, ctx, ready), results, workers, progress)
    return SuiteReport(suite=suite.name, results=results)


def run_contract(c: Contract, sample: Sample) -> tuple[Verdict | Repair | None, float, str | None]:
    """Call one contract; returns (result, seconds, error text). Repairs get the answer-blind view, in a process
    where the full sample does not exist (``contracts.blind``)."""
    if c.severity == Severity.REPAIR:
        ((out, seconds, error),) = run_repairs([c], [sample.blind()])[0]
        return out, seconds, error
    if is_user(c):  # a user file's check: in the blind (or, answer-aware, the answer) process
        ((verdict, seconds, error),) = run_checks([c], [sample])[0]
        return verdict, seconds, error
    start = time.perf_counter()
    try:
        out = c(sample.blind(with_execution=True), sample.answer()) if c.answer_aware else c(sample)
    except Exception as exc:  # any fault in a contract becomes a contract_error row, never a crash
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return None, time.perf_counter() - start, f"{type(exc).__name__}: {exc} (line {tb.lineno})"
    seconds = time.perf_counter() - start
    if c.severity == Severity.REPAIR:
        if out is not None and not isinstance(out, Repair):
            return None, seconds, f"a repair must return Repair or None, got {type(out).__name__}"
    elif not isinstance(out, Verdict):
        return None, seconds, f"a check must return Verdict, got {type(out).__name__}"
    return out, seconds, None


@dataclass(frozen=True)
class _Ctx:
    suite: str
    round: int | None


def _ordered(contracts: Sequence[Contract]) -> list[Contract]:
    """Repairs first, then cheapest first; the suite's order breaks ties (sorting is stable)."""
    return sorted(contracts, key=lambda c: (c.severity != Severity.REPAIR, c.cost))


def _map(fn: Callable[[SampleResult], None], results: list[SampleResult], workers: int,
         progress: Callable[[int], None] | None) -> None:
    if workers > 1 and len(results) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in pool.map(fn, results):
                if progress:
                    progress(1)
    else:
        for r in results:
            fn(r)
            if progress:
                progress(1)


def _with_extracted_code(sample: Sample) -> Sample:
    """Make sure the attempt carries the code that will run (extracted from the response if need be)."""
    if sample.attempt.code:
        return sample
    return with_code(sample, sample.code)


Ready = dict[tuple[int, str], tuple[Verdict | None, float, str | None]]


def _user_checks(contracts: list[Contract], results: list[SampleResult]) -> Ready:
    """The user files' checks of one stage, run ahead in one batch per process over the samples still in play (a
    result that a cheaper contract's rejection makes moot is computed, then recorded as skipped, never used)."""
    user = [c for c in contracts if is_user(c)]
    if not user or not results:
        return {}
    rows = run_checks(user, [r.sample for r in results])
    return {(id(r), c.name): out for r, row in zip(results, rows, strict=True) for c, out in zip(user, row,
                                                                                                 strict=True)}


def _not_the_program(result: SampleResult) -> bool:
    ex = result.sample.execution
    return ex is not None and ex.status in NOT_THE_PROGRAM


def _run_stage(result: SampleResult, contracts: list[Contract], ctx: _Ctx, ready: Ready | None = None) -> None:
    ex = result.sample.execution
    if contracts and contracts[0].stage == Stage.AFTER and ex is not None and ex.status in NOT_THE_PROGRAM:
        result.status = INFRA_ERROR
        for c in contracts:
            _record(result, c, Verdict.skipped(f"{ex.status.value}: {ex.error}", not_the_program=ex.status.value),
                    0.0, ctx)
        return
    for c in contracts:
        if result.status == REJECTED:
            _record(result, c, Verdict.skipped(f"short-circuited by {result.rejected_by}",
                                               short_circuit=result.rejected_by), 0.0, ctx)
            continue
        pre = (ready or {}).get((id(result), c.name))
        out, seconds, error = pre if pre is not None else run_contract(c, result.sample)
        if error is not None:
            _record(result, c, Verdict(outcome=Outcome.CONTRACT_ERROR, message=error), seconds, ctx)
            continue
        if c.severity == Severity.REPAIR:
            _apply_repair(result, c, out, seconds, ctx)
            continue
        assert isinstance(out, Verdict)
        _record(result, c, out, seconds, ctx)
        if out.dispute:
            _dispute(result, c, out)
        if out.outcome == Outcome.FAIL and c.severity == Severity.REJECT:
            result.status, result.rejected_by = REJECTED, c.name


def _apply_repair(result: SampleResult, c: Contract, out: Repair | None, seconds: float, ctx: _Ctx) -> None:
    before = result.sample.code
    if out is None or out.code == before:
        _record(result, c, Verdict.passed("nothing to repair"), seconds, ctx)
        return
    s = result.sample
    result.repairs.append(RepairRecord(
        repair_id=content_hash(canonical_json([s.sample_id, c.name, c.version, before, out.code])),
        sample_id=s.sample_id, attempt_id=s.attempt.attempt_id, contract=c.name, version=c.version, kind=out.kind,
        message=out.message, before=before, after=out.code,
    ))
    result.sample = with_code(s, out.code)
    _record(result, c, Verdict(outcome=Outcome.PASS, score=1.0, message=f"repaired: {out.kind}",
                               evidence={"repair": out.kind, "detail": out.message}), seconds, ctx)


def _dispute(result: SampleResult, c: Contract, v: Verdict) -> None:
    s = result.sample
    result.disputes.append(DisputeRow(
        dispute_id=content_hash(canonical_json([s.sample_id, c.name, v.dispute])), sample_id=s.sample_id,
        problem_id=s.problem.problem_id, contract=c.name, kind=v.dispute, message=v.message,
        evidence=evidence_json(v.evidence),
    ))
    if result.status == ACCEPTED:
        result.status = DISPUTED


def _record(result: SampleResult, c: Contract, v: Verdict, seconds: float, ctx: _Ctx) -> None:
    s = result.sample
    version = c.version
    result.verdicts.append(VerdictRow(
        verdict_id=verdict_id(s.sample_id, c.name, version), sample_id=s.sample_id, attempt_id=s.attempt.attempt_id,
        problem_id=s.problem.problem_id, round=ctx.round, suite=ctx.suite, contract=c.name, version=version,
        stage=c.stage.value, severity=c.severity.value, outcome=v.outcome.value, score=v.score, message=v.message,
        evidence=evidence_json(v.evidence), dispute=v.dispute, duration_s=round(seconds, 6),
    ))
