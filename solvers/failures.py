"""Where along the pipeline a sample failed: the one classification every report of failures derives from.

``EXEC_FAILURE`` puts each execution status in one class: ``pass``, ``no_code``, ``code`` (the program did not run
to a solve: syntax, import, build or runtime error, no solve call, tampering), ``limit`` (a sandbox rule stopped or
refused the program: memory, output or file size, processes/threads, a refused system call or network access; not
a modelling error, whether or not a solve had happened yet), ``solver`` (the solve ended without an answer:
infeasible, unbounded, numerical trouble, out of time) or ``infra`` (a sandbox fault or a licence-size refusal: says
nothing about the program, never counted against a model).
``classify_failure`` adds what the contracts saw and returns the first failure along the pipeline.

Three views name these classes in their own words and never re-decide them: the capability boundary of a policy
(``flywheel.policies.boundary``), the evaluator's miss classes (``flywheel.evaluate.score``) and the failures table
of ``flywheel stats`` (``failure_reasons``); the store's ``samples`` view never accepts an ``infra`` execution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solvers.records import ExecStatus

CATEGORIES = ("pass", "code", "limit", "solver", "formulation", "infra")

EXEC_FAILURE: dict[ExecStatus, str] = {
    ExecStatus.OK: "pass",
    ExecStatus.NO_CODE: "no_code",
    ExecStatus.SYNTAX_ERROR: "code",
    ExecStatus.IMPORT_ERROR: "code",
    ExecStatus.MODEL_BUILD_ERROR: "code",
    ExecStatus.RUNTIME_ERROR: "code",
    ExecStatus.NO_SOLVE_CALL: "code",
    ExecStatus.MEMORY_LIMIT: "limit",
    ExecStatus.OUTPUT_LIMIT: "limit",
    ExecStatus.PROCESS_LIMIT: "limit",
    ExecStatus.DENIED: "limit",
    ExecStatus.TAMPERED: "code",
    ExecStatus.SOLVER_INFEASIBLE: "solver",
    ExecStatus.SOLVER_UNBOUNDED: "solver",
    ExecStatus.SOLVER_NUMERIC: "solver",
    ExecStatus.TIMEOUT_CPU: "solver",
    ExecStatus.TIMEOUT_WALL: "solver",
    ExecStatus.LICENSE_LIMIT: "infra",
    ExecStatus.SANDBOX_ERROR: "infra",
}
INFRA_STATUSES = tuple(sorted(s.value for s, c in EXEC_FAILURE.items() if c == "infra"))

# Answer checks: a failure means the model (formulation) is wrong even though the program ran.
ANSWER_CONTRACTS = ("status_matches_ground_truth", "objective_matches", "feasible_on_reference")
# Checks on the program itself that only the contracts see.
CODE_CONTRACTS = ("has_code", "sanity", "executes", "solve_called", "uses_requested_api", "no_hardcoded_answer")


def exec_failure(status: ExecStatus | str) -> str:
    """The class of an execution status; a status this version does not know is a ``code`` failure."""
    try:
        return EXEC_FAILURE[ExecStatus(status)]
    except ValueError:
        return "code"


def classify_failure(row: Mapping[str, Any]) -> tuple[str, str]:
    """(category, detail) of one attempt, e.g. ("code", "syntax_error") or ("formulation", "objective_matches").

    ``row`` holds ``exec_status`` (None when not executed), ``verdicts`` (contract -> outcome) and optionally
    ``accepted``. The first failure wins: infrastructure, then code, then a sandbox limit, then solver outcome (unless the verified
    answer is that outcome), then answer contracts, then code contracts. When the execution status decided, the
    detail is that status."""
    raw = row.get("exec_status")
    status = "" if raw is None else str(raw)
    cls = exec_failure(status) if status else "not_executed"
    verdicts: Mapping[str, str] = row.get("verdicts") or {}
    failed = {name for name, outcome in verdicts.items() if str(outcome) == "fail"}
    if cls == "infra":
        return "infra", status
    if cls == "not_executed" and not verdicts:
        return "infra", "not_executed"
    if cls in ("code", "no_code"):
        return "code", status
    if cls == "limit":
        return "limit", status
    if cls == "solver" and verdicts.get("status_matches_ground_truth") != "pass":
        return "solver", status  # e.g. infeasible where the verified answer is not
    for name in ANSWER_CONTRACTS:
        if name in failed:
            return "formulation", name
    for name in CODE_CONTRACTS:
        if name in failed:
            return "code", name
    if row.get("accepted") is False:
        return "formulation", next(iter(sorted(failed)), "rejected")
    return "pass", ""


def failure_reasons(row: Mapping[str, Any]) -> list[str]:
    """Why a sample that was not accepted failed, as ``flywheel stats`` lists it: ``exec:<status>`` when its
    execution status is the failure (``classify_failure`` decides), else ``contract:<name>`` for every contract
    that failed or errored on it, else ``disputed`` / ``unjudged``; ``not_executed`` when it never ran."""
    if row.get("exec_status") is None:
        return ["not_executed"]
    status = str(row["exec_status"])
    if classify_failure(row)[1] == status:
        return [f"exec:{status}"]
    verdicts: Mapping[str, str] = row.get("verdicts") or {}
    failed = sorted(name for name, outcome in verdicts.items() if str(outcome) in ("fail", "contract_error"))
    if failed:
        return [f"contract:{name}" for name in failed]
    return ["disputed" if row.get("disputed") else "unjudged"]
