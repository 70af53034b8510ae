"""Turn what the worker observed about one child into an ``ExecStatus`` and a one-line reason.

The order is the precedence: evidence of tampering beats everything (nothing the program said can be believed),
then the sandbox's own limits (timeouts, output, memory), then how the program ended, then what its final solve
call concluded. A program stopped by one of the sandbox's rules is classified by that rule, whether or not it had
solved anything yet, from the evidence the sandbox has: the signal that ended it (SIGXFSZ: the file-size limit;
SIGSYS: seccomp's kill), the errno of the exception that ended it (EFBIG; EAGAIN after a process or thread
creation, CPython's "can't start new thread"; EPERM/EROFS, the network's errors: ``child._limit_kind``) and the
sandbox's own counters (the cgroup's OOM kills and ``pids.events`` "max", the audit hook's count of process
creations and refused sockets). A model error (a KeyError, an infeasible model, ...) stays a model error.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

from solvers.sandbox.verify import verify_solves
from solvers.statuses import ExecStatus, SolveStatus

# The final solve call's status decides a program that otherwise ended normally.
SOLVE_TO_EXEC = {
    SolveStatus.OPTIMAL: ExecStatus.OK,
    SolveStatus.TIME_LIMIT_WITH_SOLUTION: ExecStatus.OK,
    SolveStatus.INFEASIBLE: ExecStatus.SOLVER_INFEASIBLE,
    SolveStatus.INF_OR_UNBD: ExecStatus.SOLVER_INFEASIBLE,  # presolve's "infeasible or unbounded": almost always infeasible
    SolveStatus.UNBOUNDED: ExecStatus.SOLVER_UNBOUNDED,
    SolveStatus.NUMERIC: ExecStatus.SOLVER_NUMERIC,
    SolveStatus.LICENSE_LIMIT: ExecStatus.LICENSE_LIMIT,
    SolveStatus.TIME_LIMIT_NO_SOLUTION: ExecStatus.TIMEOUT_WALL,  # the solver's own (wall-clock) time limit
    SolveStatus.INTERRUPTED: ExecStatus.RUNTIME_ERROR,
    SolveStatus.ERROR: ExecStatus.RUNTIME_ERROR,
}


@dataclass
class Observed:
    messages: list[dict[str, Any]]
    channel_error: str | None
    exit_code: int | None  # None when killed by a signal
    term_signal: int | None
    timed_out: bool
    output_flood: bool
    oom_kills: int
    cpu_s: float
    cpu_limit: int
    leftovers: int = 0
    models_expected: bool = False  # MPS capture was on: solves through the MODEL_APIS must carry their model
    pids_max_hits: int = 0  # process creations the cgroup's pids.max refused (read only when the program failed)
    notes: list[str] = field(default_factory=list)
    verifications: list[str] = field(default_factory=list)  # the parent's check of each solve message, in order


def classify(obs: Observed) -> tuple[ExecStatus, str]:
    solves = [m.get("record") for m in obs.messages if m.get("type") == "solve"]
    done = next((m for m in obs.messages if m.get("type") == "done"), None)
    ready = any(m.get("type") == "ready" for m in obs.messages)
    # Defence outside the program's process: a claimed result must agree with its own captured model. Run first, also
    # for executions found tampered below: it removes the capture's check data from every record.
    verdict = verify_solves(solves, obs.models_expected)
    obs.notes.append(verdict.note())
    obs.verifications = verdict.per_record
    if obs.channel_error:
        return ExecStatus.TAMPERED, obs.channel_error
    # The child reports an introspection attempt the moment it happens (a program cannot take that frame back).
    alarms = [str(m.get("why", "")) for m in obs.messages if m.get("type") == "tamper"]
    if alarms or (done is not None and done.get("tamper")):
        return ExecStatus.TAMPERED, "; ".join(alarms + [str(t) for t in (done or {}).get("tamper") or []])[:500]
    if verdict.problems:
        return ExecStatus.TAMPERED, ("captured solve contradicts its own model: " + "; ".join(verdict.problems))[:500]
    if obs.timed_out:
        return ExecStatus.TIMEOUT_WALL, "wall-clock limit reached; process group killed"
    if obs.output_flood:
        return ExecStatus.OUTPUT_LIMIT, "output beyond the limit; process group killed"
    if obs.oom_kills > 0 or (done is not None and done.get("kind") == "memory"):
        return ExecStatus.MEMORY_LIMIT, "memory cap reached"
    if obs.term_signal == signal.SIGXCPU or (obs.term_signal == signal.SIGKILL and obs.cpu_s >= obs.cpu_limit):
        return ExecStatus.TIMEOUT_CPU, f"CPU-time limit ({obs.cpu_limit} s) reached"
    if obs.term_signal == signal.SIGXFSZ:
        return ExecStatus.OUTPUT_LIMIT, "file-size limit (RLIMIT_FSIZE) reached: killed by SIGXFSZ"
    if obs.term_signal == signal.SIGSYS:
        return ExecStatus.DENIED, "a system call refused by seccomp (killed by SIGSYS)"
    if not ready:
        return ExecStatus.SANDBOX_ERROR, f"sandbox set-up failed (exit {obs.exit_code}, signal {obs.term_signal})"
    if done is None:
        if obs.exit_code == 0 and solves:
            return _by_final_solve(solves, "program left through os._exit")
        if obs.exit_code == 0:
            return ExecStatus.NO_SOLVE_CALL, "program left through os._exit without a solve call"
        how = f"signal {signal.Signals(obs.term_signal).name}" if obs.term_signal else f"exit {obs.exit_code}"
        if obs.pids_max_hits:
            return ExecStatus.PROCESS_LIMIT, (f"program died ({how}) after the processes cap (pids.max) refused "
                                              f"{obs.pids_max_hits} fork(s)")
        return ExecStatus.RUNTIME_ERROR, f"program died ({how}) before finishing"
    outcome = done.get("outcome")
    if outcome == "no_code":
        return ExecStatus.NO_CODE, "the program has no statements"
    if outcome == "syntax_error":
        return ExecStatus.SYNTAX_ERROR, done.get("message", "")
    if outcome == "sandbox_error":
        return ExecStatus.SANDBOX_ERROR, done.get("message", "")
    if any(s.get("status") == SolveStatus.LICENSE_LIMIT for s in solves) or done.get("kind") == "license":
        return ExecStatus.LICENSE_LIMIT, done.get("message", "size-limited licence exceeded")
    if outcome == "exception":
        limit = _limit(done, obs)
        if limit is not None:
            return limit
        if done.get("kind") == "import":
            return ExecStatus.IMPORT_ERROR, done.get("message", "")
        if not solves:
            return ExecStatus.MODEL_BUILD_ERROR, done.get("message", "")
        status, _ = _by_final_solve(solves, "")
        if status != ExecStatus.OK:  # e.g. reading .X after an infeasible solve: the solver's verdict is the news
            return status, done.get("message", "")
        return ExecStatus.RUNTIME_ERROR, done.get("message", "")
    if outcome == "exit":
        if solves:
            status, _ = _by_final_solve(solves, "")
            if status != ExecStatus.OK:
                return status, done.get("message", "")
        return ExecStatus.RUNTIME_ERROR, done.get("message", "")
    if not solves:
        return ExecStatus.NO_SOLVE_CALL, "the program never called a solver"
    return _by_final_solve(solves, "")


_LIMIT_KINDS = {
    "fsize": (ExecStatus.OUTPUT_LIMIT, "file-size limit (RLIMIT_FSIZE) reached"),
    "pids": (ExecStatus.PROCESS_LIMIT, "processes/threads cap reached (RLIMIT_NPROC / pids.max)"),
    "denied": (ExecStatus.DENIED, "refused by the sandbox (seccomp, no network, read-only system)"),
}


def _limit(done: dict[str, Any], obs: Observed) -> tuple[ExecStatus, str] | None:
    """The sandbox rule that ended a program which raised, or None (then it is the program's own error)."""
    kind = done.get("kind")
    if kind not in _LIMIT_KINDS and done.get("errno") == 11 and obs.pids_max_hits:  # EAGAIN, and pids.max refused
        kind = "pids"
    if kind not in _LIMIT_KINDS:
        return None
    status, why = _LIMIT_KINDS[kind]
    return status, f"{why}: {done.get('message', '')}"[:500]


def _by_final_solve(solves: list[dict[str, Any]], note: str) -> tuple[ExecStatus, str]:
    final = solves[-1]
    status = SOLVE_TO_EXEC.get(SolveStatus(final.get("status", "error")), ExecStatus.RUNTIME_ERROR)
    reason = note if status == ExecStatus.OK else f"final solve: {final.get('status')}" + (
        f" ({final['error']})" if final.get("error") else "") + (
        f" (the solver claimed {final['claimed_status']}; HiGHS's re-solve shows {final.get('status')})"
        if final.get("claimed_status") else "")
    return status, reason
