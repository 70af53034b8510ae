"""Checks on what the sandbox captured: did the program run, call a solver, and report what the solver found."""

from __future__ import annotations

import re

from contracts.api import Verdict, contract
from contracts.codefacts import contains_number, printed_literals, question_numbers
from contracts.sample import Sample
from solvers.records import ExecStatus

# Statuses where the program ran to completion (infeasible and unbounded are solver answers; a program that never
# called a solver also ran, and solve_called is the contract that says what is wrong with it).
# The sandbox failed, or the solver's size-limited licence refused the model: nothing to hold against the program.
NOT_THE_PROGRAM = {ExecStatus.SANDBOX_ERROR, ExecStatus.LICENSE_LIMIT}
RAN = {ExecStatus.OK, ExecStatus.SOLVER_INFEASIBLE, ExecStatus.SOLVER_UNBOUNDED, ExecStatus.NO_SOLVE_CALL}


@contract(stage="after_execution", severity="reject", cost=0.01)
def executes(sample: Sample) -> Verdict:
    """The program ran to the end in the sandbox. Infrastructure failures are skipped, never held against it."""
    ex = sample.execution
    if ex is None:
        return Verdict.skipped("not executed")
    if ex.status in NOT_THE_PROGRAM:
        return Verdict.skipped(f"{ex.status.value}: {ex.error}", status=ex.status.value)
    if ex.status in RAN:
        return Verdict.passed(f"ran: {ex.status.value}", status=ex.status.value, wall_s=ex.wall_s)
    return Verdict.failed(f"{ex.status.value}: {ex.error}", status=ex.status.value, error=ex.error,
                          stderr_tail=ex.stderr[-500:])


@contract(stage="after_execution", severity="reject", cost=0.01)
def solve_called(sample: Sample) -> Verdict:
    """At least one solver call was captured (instrumentation, not stdout)."""
    ex = sample.execution
    if ex is None:
        return Verdict.skipped("not executed")
    if ex.solves:
        return Verdict.passed(f"{len(ex.solves)} solve call(s)", n_solves=len(ex.solves),
                              apis=sorted({s.api for s in ex.solves}))
    return Verdict.failed("no solver call was captured", status=ex.status.value)


# Only lines that label a number as the objective: "Optimal objective: 12", "objective value = 3.5", "ObjVal 7".
# Broader words (total, cost) also label per-item report lines, which are not the answer.
_REPORTED = re.compile(r"(?i)(?:objective(?: function)?(?: value)?|optimal (?:value|cost|profit)|objval)"
                       r"[^\n\d-]{0,20}(-?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?)")


@contract(stage="after_execution", severity="reject", cost=0.05)
def no_hardcoded_answer(sample: Sample) -> Verdict:
    """The objective a program reports comes from a solve call: printed objective numbers match a captured
    solve, and no literal printed by the code is the answer."""
    ex = sample.execution
    if ex is None:
        return Verdict.skipped("not executed")
    objectives = [s.objective for s in ex.solves if s.objective is not None]
    reported = []
    for m in _REPORTED.finditer(ex.stdout):
        try:
            reported.append(float(m.group(1).replace(",", "")))
        except ValueError:
            continue
    printed = [x for x in printed_literals(sample.code) if x not in (0.0, 1.0)]
    question = question_numbers(sample.problem.question)
    answer = sample.problem.ground_truth.objective if sample.problem.ground_truth else None
    suspicious = [x for x in printed if not contains_number(question, x)
                  and any(abs(x - o) <= 1e-6 * (1 + abs(o)) for o in [*objectives, *([answer] if answer else [])])]
    if suspicious:
        return Verdict.failed("the code prints the answer as a literal", printed_literals=suspicious)
    if reported and not objectives:
        return Verdict.failed("reports an objective but no solve produced one", reported=reported[-3:])
    if reported:
        last = reported[-1]
        # Printing rounds: accept the last reported number if it matches any solve to 1e-4 relative or to the
        # printed precision (a program may print round(obj, 2)).
        ok = any(abs(last - o) <= max(1e-4 * (1 + abs(o)), 0.51 * 10 ** -_decimals(m.group(1)))
                 for o in objectives for m in [list(_REPORTED.finditer(ex.stdout))[-1]])
        if not ok:
            return Verdict.failed("the reported objective matches no solve call", reported=last,
                                  solve_objectives=objectives[-3:])
    return Verdict.passed("objective comes from a solve call", solve_objectives=objectives[-3:],
                          reported=reported[-1:] or None)


def _decimals(token: str) -> int:
    return len(token.split(".")[1]) if "." in token and "e" not in token.lower() else 0
