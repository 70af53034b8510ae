"""Candidates from outside the registry (an LLM or a person), as Python files, and the sandboxed screen they pass
before the tuner lets them into its own process.

A candidate file defines ``OP = "<op name>"`` and ``def candidate(...)`` with the op's signature (the prompt an LLM
gets is the reference implementation's source, ``prompt(op)``). Who writes the files is not this package's business:
``flywheel.kernel_candidates.LLMWriter`` (the policy layer) asks a model and hands the tuner files.

The screen (``screen``): the file, the op's captured inputs (``torch.save``, base64) and a copy of this package's
sources become one program for a ``Runner``, a callable the caller injects (the CLI passes the project's sandbox,
``flywheel.kernel_candidates.sandbox_runner``: no network, memory / process / CPU caps, a scrubbed environment, a
private working directory). In there a harness imports the file, verifies it against ``reference`` on the captured,
random and adversarial inputs and races it against ``reference`` on the CPU. A crash, a hang, a refused system call,
a wrong answer or a harness that does not return is a rejected candidate.

What the screen returns is a **claim**: code that runs in the harness's process can print or return anything. So
nothing the screen reports reaches the table. A candidate that passes is loaded into the tuner's process
(``registry.load_file``), verified there on the parent's own inputs, raced beside ``reference`` and the registered
backends, and (if it wins) confirmed once more on fresh inputs it never saw (``kernels.tuner.tune_op``); the table
records only those measurements. The screen's claim is kept beside them (``Candidate.detail``), so a candidate whose
claim disagrees with the parent's measurement is visible as such.

Trust boundary, stated plainly: the screen keeps what a candidate does while it is screened away from the network,
the user's secrets and files. A candidate that passes runs unsandboxed in the tuner (its race) and, if it wins, in
every training process that applies the table (``TuningTable.load`` registers the files it names). Code that
behaves well only inside the sandbox is not caught by this; read a winning file before training with its table.
"""

from __future__ import annotations

import ast
import base64
import inspect
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import kernels
from kernels import registry

SCREEN_TIMEOUT_S = 300.0  # importing torch in a fresh child (~2 s) + verification + a short race

# Kept for callers that named them here before they moved to the registry.
backend_name = registry.file_backend_name
load_file = registry.load_file
register_files = registry.register_files


def prompt(op: str) -> str:
    """What an LLM is given to write a candidate: the reference source and the contract."""
    src = inspect.getsource(registry.get(op).fn)
    return (f"Write a faster PyTorch implementation of the op `{op}`. Same signature, same numerics (forward and "
            f"gradients), no caching of results between calls. Reply with one self-contained Python file (it imports "
            f"what it uses) in a ```python block, defining OP = {op!r} and a function `candidate` with this "
            f"signature.\n\nReference:\n{src}")


def declared_op(code: str) -> str | None:
    """The string a module-level ``OP = "..."`` assigns, or None (also when the code does not parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "OP" for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None


def op_of(path: str | Path) -> str:
    op = declared_op(Path(path).read_text())
    if op is None:
        raise ValueError(f"{path}: no OP = ... line")
    return op


def check_source(code: str, op: str) -> str:
    """Why ``code`` is not a candidate file for ``op`` ('' when it is one). Only the shape of the file is checked
    here; whether it imports, runs and is right is for the child process."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        return f"code does not parse: {exc}"
    declared = declared_op(code)
    if declared is None:
        return "code defines no OP = \"<op>\""
    if declared != op:
        return f"code declares OP = {declared!r}, asked for {op!r}"
    defines = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    defines |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if "candidate" not in defines:
        return "code defines no function `candidate`"
    return ""


@dataclass(frozen=True)
class Rejected:
    """An LLM reply that did not become a candidate file; raced as a failed candidate named ``name``."""

    op: str
    name: str
    reason: str


@dataclass(frozen=True)
class Job:
    """One program for a ``Runner``: ``code`` defines ``entry``, called with ``args``; ``files`` (relative name ->
    text) are written into its working directory, which is on ``sys.path``."""

    job_id: str
    code: str
    entry: str
    args: list[Any]
    files: dict[str, str]
    timeout_s: float = SCREEN_TIMEOUT_S


@dataclass(frozen=True)
class JobResult:
    """What a runner saw: ``returned`` is the entry's JSON return value when it returned normally (``None``
    otherwise), ``error`` why it did not (a status and message from the runner), ``isolation`` what it ran under."""

    returned: Any
    error: str = ""
    isolation: str = ""
    wall_s: float = 0.0


Runner = Callable[[Job], JobResult]

# Runs inside the runner (the sandbox). Imports this package from the copy shipped in the working directory.
HARNESS = '''
import base64
import io
import math

import torch


def _num(x):
    return x if isinstance(x, float) and math.isfinite(x) else None


def screen(candidate_path, inputs_path):
    torch.set_num_threads(1)
    from kernels import registry
    from kernels.tuner import race, verify_all

    with open(inputs_path) as f:
        data = torch.load(io.BytesIO(base64.b64decode(f.read())), weights_only=False)
    op = registry.load_file(candidate_path)
    if op != data["op"]:
        return {"ok": False, "detail": f"declares OP = {op!r}, screened for {data['op']!r}"}
    name = registry.file_backend_name(candidate_path)
    ok, err, detail = verify_all(op, name, data["args"], data["kwargs"], data["dtype"], "cpu")
    if not ok:
        return {"ok": False, "max_error": _num(err), "detail": detail}
    ms = race({"reference": registry.get(op).fn, name: registry.get(op, name).fn}, data["args"], data["kwargs"],
              data["dtype"], "cpu", data["repeats"])
    return {"ok": True, "max_error": _num(err), "ms": _num(ms[name]), "reference_ms": _num(ms["reference"]),
            "detail": ""}
'''


def package_sources() -> dict[str, str]:
    """This package's Python sources, relative to the folder above it (``kernels/...py``), for the harness."""
    root = Path(kernels.__file__).resolve().parent
    return {f"kernels/{p.relative_to(root).as_posix()}": p.read_text() for p in sorted(root.rglob("*.py"))
            if "__pycache__" not in p.parts}


def _cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().requires_grad_(value.requires_grad)
    if isinstance(value, tuple | list):
        return type(value)(_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    return value


def screen_job(path: str | Path, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str,
               repeats: int, timeout_s: float = SCREEN_TIMEOUT_S) -> Job:
    """The screening program for candidate ``path`` on ``op``'s captured inputs (moved to the CPU: the sandbox has
    no accelerator; the parent's own checks run on the tuning device)."""
    path = Path(path)
    buf = io.BytesIO()
    torch.save({"op": op, "args": _cpu(args), "kwargs": _cpu(kwargs), "dtype": dtype, "repeats": repeats}, buf)
    cand = f"candidates/{path.stem}.py"  # a folder not on sys.path: a file named torch.py shadows nothing
    files = {**package_sources(), cand: path.read_text(), "inputs.b64": base64.b64encode(buf.getvalue()).decode()}
    return Job(f"kernel-candidate-{path.stem}-{op}", HARNESS, "screen", [cand, "inputs.b64"], files, timeout_s)


@dataclass(frozen=True)
class Screen:
    """The screen's verdict: ``ok`` False with ``detail`` (crash, denial, timeout, wrong numerics), or a claim."""

    ok: bool
    detail: str = ""
    claimed_ms: float | None = None
    claimed_reference_ms: float | None = None
    isolation: str = ""

    def claim(self) -> str:
        if self.claimed_ms is None or self.claimed_reference_ms is None:
            return "screen passed"
        return (f"screen claimed {self.claimed_ms:.4g} ms vs reference {self.claimed_reference_ms:.4g} ms "
                f"({self.claimed_reference_ms / self.claimed_ms:.2f}x)" if self.claimed_ms > 0 else
                f"screen claimed {self.claimed_ms:.4g} ms")


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def screen(path: str | Path, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, repeats: int,
           runner: Runner) -> Screen:
    """Run the screening harness for ``path`` through ``runner``; never raises for what the candidate does."""
    res = runner(screen_job(path, op, args, kwargs, dtype, repeats))
    ret = res.returned
    if not isinstance(ret, dict):
        return Screen(False, f"sandbox: {res.error or 'the harness returned nothing'}", isolation=res.isolation)
    if ret.get("ok") is not True:
        return Screen(False, f"sandbox: {str(ret.get('detail') or 'rejected')[:300]}", isolation=res.isolation)
    return Screen(True, "", _float(ret.get("ms")), _float(ret.get("reference_ms")), res.isolation)
