"""SandboxFusion's ``POST /run_code`` shape, served by ``sandbox serve`` so that tools written against a SandboxFusion
server (verl's ``sandbox_fusion`` reward path among them) can point at ours unchanged.

Request (SandboxFusion's ``RunCodeRequest``): ``code``, ``language``, ``compile_timeout``, ``run_timeout``,
``memory_limit_MB``, ``stdin``, ``files`` (name -> base64 content), ``fetch_files``. Response (``RunCodeResponse``):
``status`` (``Success`` | ``Failed`` | ``SandboxError``), ``message``, ``compile_result`` (always null: Python),
``run_result`` (``status`` ``Finished`` | ``TimeLimitExceeded`` | ``Error``, ``execution_time``, ``return_code``,
``stdout``, ``stderr``), ``executor_pod_name``, ``files``. What SandboxFusion has no field for (the captured solves,
our status) travels in the extra key ``flywheel``, which SandboxFusion clients ignore.

Only Python runs here (``python``, ``python3``, ``pytest`` is not supported); ``stdin`` is given to the program as
``sys.stdin``; ``fetch_files`` are not returned (the working directory is torn down with the program) and say so
in ``message``. ``memory_limit_MB`` above the server's cap is capped; the server's cgroup limit applies.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solvers.records import ExecStatus, Execution
from solvers.sandbox.program import Program

PYTHON = ("python", "python3")


class RunCodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: str
    language: str = "python"
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    memory_limit_MB: int = -1  # noqa: N815 - SandboxFusion's field name
    stdin: str | None = None
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


class CommandRunResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    flywheel: dict[str, Any] = Field(default_factory=dict)


class FusionInputError(ValueError):
    """A request this server cannot run (another language, a binary data file): answered as ``SandboxError``."""


_STDIN = "import io as _fw_io, sys as _fw_sys\n_fw_sys.stdin = _fw_io.StringIO({stdin!r})\ndel _fw_io, _fw_sys\n"


def to_program(req: RunCodeRequest, program_id: str) -> Program:
    if req.language not in PYTHON:
        raise FusionInputError(f"language {req.language!r} is not supported here; this server runs: python")
    files = {}
    for name, content in req.files.items():
        if content is None:
            continue
        try:
            files[name] = base64.b64decode(content, validate=True).decode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise FusionInputError(f"file {name!r}: not base64 of UTF-8 text ({exc})") from exc
    # The stdin prelude goes on the first line of its own: the program's `from __future__` imports, if any, would
    # refuse to follow it, so they are not supported together with stdin.
    code = _STDIN.format(stdin=req.stdin) + req.code if req.stdin else req.code
    try:
        return Program(program_id=program_id, code=code, files=files)
    except ValueError as exc:
        raise FusionInputError(str(exc)) from exc


_FAILED_TO_RUN = {ExecStatus.SANDBOX_ERROR}
_TIME = {ExecStatus.TIMEOUT_WALL, ExecStatus.TIMEOUT_CPU}


def to_response(execution: Execution, fetch_files: list[str], pod: str) -> RunCodeResponse:
    status = execution.status
    extra = {"status": str(status), "error": execution.error, "objective": execution.objective,
             "solves": [{"api": s.api, "solver": s.solver, "status": str(s.status), "objective": s.objective,
                         "verification": s.verification} for s in execution.solves]}
    if status in _FAILED_TO_RUN:
        return RunCodeResponse(status="SandboxError", message=execution.error, executor_pod_name=pod, flywheel=extra)
    if status in _TIME:
        run = CommandRunResult(status="TimeLimitExceeded", execution_time=execution.wall_s, return_code=None,
                               stdout=execution.stdout, stderr=execution.stderr)
    else:
        # A program that ran to its end is "Finished" with return code 0 even when its solve said "infeasible":
        # SandboxFusion knows only the process. Everything else the program did wrong is a non-zero return code.
        finished = status in (ExecStatus.OK, ExecStatus.NO_SOLVE_CALL, ExecStatus.SOLVER_INFEASIBLE,
                              ExecStatus.SOLVER_UNBOUNDED, ExecStatus.SOLVER_NUMERIC)
        # The sandbox keeps a failing program's exception in ``error``, not on stderr: SandboxFusion clients look
        # for it on stderr (as a traceback's last line).
        stderr = execution.stderr
        if not finished and execution.error and execution.error not in stderr:
            stderr = (stderr + ("" if not stderr or stderr.endswith("\n") else "\n")) + execution.error + "\n"
        run = CommandRunResult(status="Finished", execution_time=execution.wall_s, return_code=0 if finished else 1,
                               stdout=execution.stdout, stderr=stderr)
    message = execution.error
    if fetch_files:
        message = (message + "; " if message else "") + "fetch_files is not supported: the workdir is not kept"
    ok = run.status == "Finished" and run.return_code == 0
    return RunCodeResponse(status="Success" if ok else "Failed", message=message, run_result=run,
                           executor_pod_name=pod, flywheel=extra)
