"""Backend registry: every op has named backends (``reference``, ``compiled``, ``triton``, ``npu``, ...).

A backend is a plain function with the op's signature. Each op module registers its backends at import time with
``@backend(op, name, devices=..., available=...)``; the tuner and ``kernels.apply`` only ever look them up by name,
so adding a backend is adding one decorated function in the op's file.

``available`` says whether the backend can run in this process (Triton installed, torch_npu importable, ...);
``devices`` says which device types it is written for. A backend registered but not available is listed with its
reason, never silently dropped.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvers.errors import unknown_name

REFERENCE = "reference"


@dataclass(frozen=True)
class Backend:
    op: str
    name: str
    fn: Callable[..., Any]
    devices: tuple[str, ...]
    available: Callable[[], bool] = field(default=lambda: True)
    note: str = ""
    gemm: str = ""  # "float32": its GEMMs run in fp32 whatever the autocast dtype ("" = the autocast / input dtype)

    def runs_on(self, device: str) -> bool:
        return device in self.devices and self.available()


OPS: dict[str, dict[str, Backend]] = {}


def backend(op: str, name: str, devices: tuple[str, ...] = ("cpu", "cuda", "npu"),
            available: Callable[[], bool] | None = None, note: str = "", gemm: str = "") -> Callable[[Callable], Callable]:
    """Register ``fn`` as backend ``name`` of ``op`` (``gemm="float32"``: it computes its GEMMs in fp32, which the
    trainer's MFU must know: the peak to divide by is that of the dtype the GEMMs really ran in)."""
    def deco(fn: Callable) -> Callable:
        OPS.setdefault(op, {})[name] = Backend(op, name, fn, devices, available or (lambda: True), note, gemm)
        return fn
    return deco


def get(op: str, name: str = REFERENCE) -> Backend:
    _load()
    if op not in OPS:
        raise unknown_name("kernel op", op, list(OPS))
    if name not in OPS[op]:
        raise unknown_name(f"{op} backend", name, list(OPS[op]))
    return OPS[op][name]


def backends(op: str, device: str | None = None) -> list[Backend]:
    """Registered backends of ``op``; with ``device``, only those that can run there now (reference first)."""
    _load()
    found = list(OPS.get(op, {}).values())
    if device is not None:
        found = [b for b in found if b.runs_on(device)]
    return sorted(found, key=lambda b: b.name != REFERENCE)


def op_names() -> list[str]:
    _load()
    return list(OPS)


def file_backend_name(path: str | Path) -> str:
    """The backend name of a candidate file: ``file:<stem>``."""
    return f"file:{Path(path).stem}"


def load_file(path: str | Path) -> str:
    """Import a candidate file (``OP = "<op>"`` and ``def candidate(...)``) and register it as backend
    ``file:<stem>`` of its op; returns the op name. This runs the file's code in this process: the tuner does it
    only for a candidate that passed the sandboxed screen (``kernels.candidate``), and ``TuningTable.load`` for the
    winners a table names."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"kernels_candidate_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import candidate {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    op = mod.OP
    get(op)  # unknown op -> UnknownNameError
    backend(op, file_backend_name(path), note=f"candidate file {path}")(mod.candidate)
    return op


def register_files(files: dict[str, str]) -> None:
    """Register the candidate files a tuning table names (``meta.candidate_files``: backend -> path)."""
    for path in files.values():
        load_file(path)


def has_module(name: str) -> Callable[[], bool]:
    """An ``available`` predicate: the module imports (checked lazily, once)."""
    cache: list[bool] = []

    def check() -> bool:
        if not cache:
            cache.append(importlib.util.find_spec(name) is not None)
        return cache[0]
    return check


def cuda_triton() -> bool:
    import torch

    return has_module("triton")() and torch.cuda.is_available()


_loaded: list[bool] = []


def _load() -> None:
    if not _loaded:
        _loaded.append(True)
        from kernels import ops  # noqa: F401  (imports every op module, which registers its backends)
