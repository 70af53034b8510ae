"""Candidates from outside the registry (an LLM through the policy backends, or a person), as Python files.

A candidate file defines ``OP = "<op name>"`` and ``def candidate(...)`` with the op's signature (the prompt an LLM
gets is the reference implementation's source, ``prompt(op)``). It never runs in the tuner's process: the inputs are
saved with ``torch.save``, and a child process (``python -m kernels.candidate``) imports the file, verifies it
against ``reference`` on the captured, random and adversarial inputs, times it the same way the registered backends
are timed, and prints one JSON line. A crash, a hang (timeout) or a wrong answer is a rejected candidate.

A winning candidate is named ``file:<stem>`` in the table, whose ``meta.candidate_files`` keeps the file's path;
``register_files`` registers those backends again when the table is applied.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from kernels import registry

TIMEOUT_S = 600


def backend_name(path: str | Path) -> str:
    return f"file:{Path(path).stem}"


def load_file(path: str | Path) -> str:
    """Import a candidate file and register it as a backend of its op; returns the op name."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"kernels_candidate_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import candidate {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    op = mod.OP
    registry.get(op)  # unknown op -> UnknownNameError
    registry.backend(op, backend_name(path), note=f"candidate file {path}")(mod.candidate)
    return op


def register_files(files: dict[str, str]) -> None:
    for path in files.values():
        load_file(path)


def prompt(op: str) -> str:
    """What an LLM is given to write a candidate: the reference source and the contract."""
    src = inspect.getsource(registry.get(op).fn)
    return (f"Write a faster PyTorch implementation of the op `{op}`. Same signature, same numerics (forward and "
            f"gradients), no caching of results between calls. Reply with a Python file defining OP = {op!r} and a "
            f"function `candidate` with this signature.\n\nReference:\n{src}")


def op_of(path: str | Path) -> str:
    for line in Path(path).read_text().splitlines():
        if line.startswith("OP ="):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise ValueError(f"{path}: no OP = ... line")


def evaluate(path: str | Path, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, device: str,
             repeats: int) -> dict[str, Any]:
    """Run the candidate in a child process; {"ok", "ms", "max_error", "detail"}."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.pt"
        torch.save({"op": op, "args": args, "kwargs": kwargs, "dtype": dtype, "device": device,
                    "repeats": repeats}, inputs)
        try:
            proc = subprocess.run([sys.executable, "-m", "kernels.candidate", str(path), str(inputs)],
                                  capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"ok": False, "ms": float("nan"), "max_error": float("inf"), "detail": "timeout"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "ms": float("nan"), "max_error": float("inf"), "detail": f"crashed: {tail}"}
    return json.loads(lines[-1])


def _child(path: str, inputs: str) -> None:
    from kernels.tuner import time_backend, verify_all

    data = torch.load(inputs, weights_only=False)
    op = load_file(path)
    if op != data["op"]:
        print(json.dumps({"ok": False, "ms": float("nan"), "max_error": float("inf"), "detail": "other op"}))
        return
    name = backend_name(path)
    ok, err, detail = verify_all(op, name, data["args"], data["kwargs"], data["dtype"], data["device"])
    ms = time_backend(registry.get(op, name).fn, data["args"], data["kwargs"], data["dtype"], data["device"],
                      data["repeats"]) if ok else float("nan")
    print(json.dumps({"ok": ok, "ms": ms, "max_error": err, "detail": detail}))


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
