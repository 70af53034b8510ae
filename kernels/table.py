"""The tuning table: (device, op, shape, dtype) -> backend, written by ``flywheel kernels tune``, read by ``apply``.

Shapes are the op's *signature* shape (``shape_key``): the dimensions fixed by the model (hidden size, vocab,
experts, head dim), not the token count, which changes from batch to batch. A lookup falls back to the op's
``defaults`` entry (the backend that won most shapes), then to ``reference``.

File format (JSON)::

    {"version": 1, "device": "cpu", "entries": [{"device": "cpu", "op": "rms_norm", "shape": "D=64",
      "dtype": "bfloat16", "backend": "fused", "speedup": 1.4, ...}], "defaults": {"rms_norm": "fused"}}
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernels import registry
from kernels.machine import capability
from solvers.errors import ConfigError

VERSION = 1


class TableMachineWarning(UserWarning):
    """A tuning table recorded on another kind of machine was ignored."""


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class Entry:
    device: str
    op: str
    shape: str
    dtype: str
    backend: str
    speedup: float = 1.0
    reference_ms: float = 0.0
    backend_ms: float = 0.0
    max_error: float = 0.0


@dataclass
class TuningTable:
    device: str = "cpu"
    entries: list[Entry] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {(e.device, e.op, e.shape, e.dtype): e.backend for e in self.entries}

    def choose(self, op: str, shape: str, dtype: str, device: str) -> str:
        return self._index.get((device, op, shape, dtype)) or self.defaults.get(op) or "reference"

    def ops(self) -> set[str]:
        return {e.op for e in self.entries} | set(self.defaults)

    def to_json(self) -> str:
        return json.dumps({"version": VERSION, "device": self.device, "entries": [asdict(e) for e in self.entries],
                           "defaults": self.defaults, "meta": self.meta}, indent=2)

    def save(self, path: str | Path) -> None:
        """Write the table, stamped with this machine's kind (``meta.machine``) unless it already names one."""
        self.meta.setdefault("machine", capability(self.device))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(self.to_json())

    @classmethod
    def uniform(cls, choices: dict[str, str], device: str = "cpu") -> TuningTable:
        """A table that picks one backend per op whatever the shape (tests, hand-written tables)."""
        return cls(device=device, defaults=dict(choices))

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> TuningTable:
        """The table at ``path``; an empty one (every op ``reference``), with a warning, when it was recorded on
        another kind of machine than this one (``meta.machine`` vs ``kernels.machine.capability``) or names no
        machine: winners measured on other matrix units are not evidence for these."""
        p = Path(path)
        if not p.is_file():
            raise ConfigError("kernel tuning table not found", culprit=str(path))
        try:
            raw = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"kernel tuning table is not JSON: {e}", culprit=str(path)) from None
        if raw.get("version") != VERSION:
            raise ConfigError(f"kernel tuning table version {raw.get('version')!r}, expected {VERSION}",
                              culprit=str(path))
        meta = dict(raw.get("meta", {}))
        here = capability(device or raw.get("device", "cpu"))
        recorded = meta.get("machine")
        if recorded != here:
            warnings.warn(f"kernel tuning table {path} was recorded on {recorded or 'an unrecorded machine'}, this "
                          f"machine is {here}: ignored (every op runs its reference backend); run `flywheel kernels "
                          f"tune` here", TableMachineWarning, stacklevel=2)
            return cls(raw.get("device", "cpu"), meta={**meta, "ignored": f"recorded on {recorded}, here {here}"})
        entries = [Entry(**e) for e in raw.get("entries", [])]
        files = meta.get("candidate_files") or {}
        if files:  # candidate backends that won live in files beside the table: register them again
            registry.register_files(files)
        return cls(raw.get("device", "cpu"), entries, dict(raw.get("defaults", {})), meta)


def majority_defaults(entries: Iterable[Entry]) -> dict[str, str]:
    """Per op, the backend chosen for the most shapes (ties: the first seen)."""
    counts: dict[str, dict[str, int]] = {}
    for e in entries:
        counts.setdefault(e.op, {}).setdefault(e.backend, 0)
        counts[e.op][e.backend] += 1
    return {op: max(c, key=lambda b: c[b]) for op, c in counts.items()}
