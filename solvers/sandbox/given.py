"""What a warm worker and its program children know of a ``SandboxConfig`` and a ``Program``: plain views of the
JSON the parent sends.

Why not the pydantic models: everything a worker imports is copied into every program's address space by fork and
torn down at its exit, and pydantic with its validators costs each program ~1 ms of that (see
``solvers/statuses.py``). The parent has validated both (``program.py``); this side only reads them.
"""

from __future__ import annotations

from typing import Any


def cpu_limit(cpu_s: int | None, timeout_s: float) -> int:
    """RLIMIT_CPU seconds: ``cpu_s`` if set, else the wall timeout rounded up (the one rule, used by both sides)."""
    return cpu_s if cpu_s is not None else max(1, int(timeout_s + 0.999))


class GivenConfig:
    """A ``SandboxConfig``'s fields as attributes (``SandboxConfig.model_dump(mode="json")``)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    @property
    def cpu_limit(self) -> int:
        return cpu_limit(self.cpu_s, self.timeout_s)


class GivenProgram:
    """A ``Program``'s fields as attributes (``Program.model_dump(mode="json")``)."""

    def __init__(self, program_id: str, code: str, entry: str | None = None, args: Any = None,
                 files: dict[str, str] | None = None) -> None:
        self.program_id, self.code, self.entry, self.args = program_id, code, entry, args
        self.files: dict[str, str] = files or {}
