"""Candidates from outside the registry (an LLM through the policy backends, or a person), as Python files.

A candidate file defines ``OP = "<op name>"`` and ``def candidate(...)`` with the op's signature (the prompt an LLM
gets is the reference implementation's source, ``prompt(op)``). It never runs in the tuner's process: the inputs are
saved with ``torch.save``, and a child process (``python -m kernels.candidate``) imports the file, verifies it
against ``reference`` on the captured, random and adversarial inputs, times it the same way the registered backends
are timed, and prints one JSON line. A crash, a hang (timeout) or a wrong answer is a rejected candidate.

A winning candidate is named ``file:<stem>`` in the table, whose ``meta.candidate_files`` keeps the file's path;
``register_files`` registers those backends again when the table is applied.

``LLMWriter`` asks a policy (any spec ``flywheel run-round --policy`` takes, through the same backends, response cache
and code extraction) for candidates: ``prompt(op)`` goes out, the reply's Python block is written as a candidate file
with its provenance in a header comment, and from there it is raced like any other file. A reply that yields no
usable file (no reply, no code, no ``OP`` / ``candidate``, the wrong op) is a ``Rejected`` with the reason.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kernels import registry

if TYPE_CHECKING:
    from flywheel.config import PolicySection
    from flywheel.policies.backends.base import Backend

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


@dataclass
class Written:
    files: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    requests_sent: int = 0
    cache_hits: int = 0

    def meta(self, spec: str) -> dict[str, Any]:
        return {"spec": spec, "files": self.files, "requests_sent": self.requests_sent,
                "cache_hits": self.cache_hits,
                "rejected": [{"op": r.op, "name": r.name, "reason": r.reason} for r in self.rejected]}


@dataclass
class LLMWriter:
    """Writes ``k`` candidate files per op into ``folder`` from policy ``spec``; ``top`` is how many of the
    profile's most expensive ops to ask about. Replies go through the policy response cache (``cache_dir``,
    default ``folder``), so a re-run of the tuner asks nothing already answered."""

    spec: str
    folder: Path
    k: int = 1
    top: int = 3
    temperature: float = 0.7
    cache_dir: Path | None = None
    settings: PolicySection | None = None
    backend: Backend | None = None

    def __call__(self, ops: list[str]) -> Written:
        from flywheel.config import PolicySection
        from flywheel.policies.backends.base import ChatRequest, Completion, make_backend
        from flywheel.policies.cache import fingerprint
        from flywheel.policies.extract import extract_code
        from flywheel.policies.run import PolicyRun, ask, sample_seed
        from solvers.records import content_hash

        settings = self.settings or PolicySection()
        backend = self.backend or make_backend(self.spec, settings)
        sampling = {"temperature": self.temperature, "top_p": settings.top_p, "max_tokens": settings.max_tokens}
        jobs: list[tuple[str, int, str, ChatRequest]] = []
        for op in ops:
            text = prompt(op)
            prompt_hash = content_hash(text, 64)
            for n in range(self.k):
                key = fingerprint(**backend.identity, purpose="kernel_candidate", prompt_hash=prompt_hash,
                                  sampling=sampling, op=op, sample_index=n)
                jobs.append((op, n, prompt_hash, ChatRequest(
                    key=key, messages=({"role": "user", "content": text},), temperature=self.temperature,
                    top_p=settings.top_p, max_tokens=settings.max_tokens, seed=sample_seed(f"kernels/{op}", n))))
        self.folder.mkdir(parents=True, exist_ok=True)
        run = PolicyRun()
        outcomes = ask(backend, [j[3] for j in jobs], self.cache_dir or self.folder, run, spec=self.spec)
        out = Written(requests_sent=run.requests_sent, cache_hits=run.cache_hits)
        for op, n, prompt_hash, req in jobs:
            stem = f"{op}-{n}"
            outcome = outcomes.get(req.key)
            if not isinstance(outcome, Completion):
                why = f"{outcome.kind}: {outcome.message}" if outcome is not None else "backend returned nothing"
                out.rejected.append(Rejected(op, f"llm:{stem}", f"no reply ({why})"))
                continue
            (self.folder / f"{stem}.reply.md").write_text(outcome.text)
            code = extract_code(outcome.text)
            reason = check_source(code, op) if code else "reply holds no code"
            if reason:
                out.rejected.append(Rejected(op, f"llm:{stem}", reason))
                continue
            header = (f"# Kernel candidate for {op!r}, written by an LLM for `flywheel kernels tune`.\n"
                      f"# policy: {self.spec}\n# model: {backend.spec.model}\n# prompt_sha256: {prompt_hash}\n"
                      f"# request: {req.key}\n# sample: {n} (temperature {self.temperature:g})\n"
                      f"# finish_reason: {outcome.finish_reason}\n\n")
            path = self.folder / f"{stem}.py"
            path.write_text(header + code)
            out.files.append(str(path.resolve()))
        return out


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
