"""The JSON shapes programs and executions travel in: ``sandbox run --json``, every ``sandbox batch`` line, the
``sandbox serve`` API and its client. One place, so a file written by ``batch`` and a server's reply read the same.
"""

from __future__ import annotations

from typing import Any

from solvers.errors import SandboxError
from solvers.records import Execution
from solvers.sandbox.program import Program


def execution_json(execution: Execution, with_mps: bool = False) -> dict[str, Any]:
    """The JSON shape of one execution (shared by ``run --json``, every ``batch`` output line and the server)."""
    data = execution.model_dump(mode="json")
    data["objective"] = execution.objective
    if not with_mps:
        for solve in data["solves"]:
            solve["model_mps"] = None if solve["model_mps"] is None else f"<{len(solve['model_mps'])} chars>"
    return data


def execution_from_json(data: dict[str, Any]) -> Execution:
    """The inverse of ``execution_json(..., with_mps=True)`` (``id`` and the derived ``objective`` are dropped)."""
    fields = {k: v for k, v in data.items() if k not in ("id", "objective")}
    try:
        return Execution.model_validate(fields)
    except ValueError as exc:
        raise SandboxError(f"not an execution: {exc}", culprit=str(data.get("program_id", data.get("id", "?")))) \
            from exc


def program_from_row(row: Any, where: str) -> Program:
    """One program from a ``sandbox batch`` line / API object: id, code, optional entry, args, files."""
    if not isinstance(row, dict):
        raise SandboxError("a program must be a JSON object with id and code", culprit=where)
    try:
        return Program(program_id=str(row["id"]), code=row["code"], entry=row.get("entry"), args=row.get("args"),
                       files=row.get("files") or {})
    except (KeyError, TypeError, ValueError) as exc:
        raise SandboxError(f"bad program: {exc}", culprit=where) from exc


def program_row(program: Program) -> dict[str, Any]:
    """The inverse of ``program_from_row``."""
    row: dict[str, Any] = {"id": program.program_id, "code": program.code}
    if program.entry is not None:
        row["entry"] = program.entry
    if program.args is not None:
        row["args"] = program.args
    if program.files:
        row["files"] = dict(program.files)
    return row
