"""Code that could reach the answer runs where the answer does not exist: warm child interpreters in the sandbox's
jail (``contracts/jail.py``: bubblewrap without the store or any host path beyond the interpreter and the packages,
no network, a cleared environment, an unprivileged uid, no file writes, seccomp), started as
``python -m contracts.blind ROLE`` (not forked, so nothing of the parent's memory is copied in).

Two roles, two processes that share nothing (no file, no namespace, no uid):

- ``blind`` runs every repair (the engine's and the user's) and the plain checks of user contract files. It only
  ever receives ``BlindSample`` JSON (with the candidate's execution for after-execution checks): no ground truth,
  reference model or programs ever enter it, so frame walks (``sys._getframe``), ``gc.get_objects()``, the store's
  files and the environment hold nothing to find.
- ``answer`` runs the answer-aware checks of user contract files (``@contract(answer_aware=True)``), which receive
  the ``Answer`` as an explicit argument. What comes back is a verdict, never code, and nothing it holds reaches the
  blind process, so it cannot influence a repair or the stored program text.

User contract files are imported only here: the parent reads the file's text, the blind process executes it and
answers each contract's metadata (name, stage, severity, cost, parameters, source for the version), and the parent
registers a ``UserFn`` stand-in that has no code. Replies are JSON (never pickles: a child's reply is untrusted).

Cost: one child per role per parent process, started on first use and kept warm (``shutdown()`` ends them); one
message per chunk of samples per stage.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import linecache
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cloudpickle

from contracts import jail
from contracts.api import REGISTRY, Contract, Repair, Verdict, function_source
from contracts.sample import Answer, BlindSample, Sample
from solvers.errors import FlywheelError

# (Repair or Verdict as JSON or None, seconds, error text or None), one per contract, in order.
Outcome = tuple[str | None, float, str | None]

CHUNK = 64  # samples per message: amortises the pickled functions and the round trip
READY_TIMEOUT_S = 180.0  # start-up on a loaded 2-core machine: bwrap, the interpreter, pydantic
CALL_TIMEOUT_S = 600.0  # one chunk; a contract that hangs costs its chunk (contract_error rows), not the round
ROLES = ("blind", "answer")


@dataclass(frozen=True)
class UserFn:
    """Stands, in the parent, for a function of a user contract file: the file is imported only in the blind
    process, so the parent holds the file, the contract's name and its source (for the version), never its code."""

    path: str
    name: str
    source_text: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise FlywheelError("a user contract runs only in the blind process (contracts.engine.run_contract)",
                            culprit=self.path)


def is_user(c: Contract) -> bool:
    return isinstance(c.fn, UserFn)


def module_name(path: str) -> str:
    """The module a user file becomes: derived from its absolute path, so loading it twice replaces its contracts."""
    return "flywheel_user_contracts_" + hashlib.sha256(path.encode()).hexdigest()[:10]


# The user files the parent has loaded, in order (path -> text); every message carries them, so a child that was
# restarted, or the answer process on first use, executes them before it runs anything.
_FILES: dict[str, str] = {}


class _Dead(Exception):
    """The child died or timed out; the parent turns its chunk into contract_error rows."""


class _Worker:
    """One warm jailed child; length-prefixed frames over its stdin (pickle: the parent's own data) and stdout
    (JSON: the child's answers are untrusted); a lock serialises callers on threads."""

    def __init__(self, role: str) -> None:
        argv, env, cwd, layers = jail.command(role)
        self.role = role
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd,
                                     bufsize=0)
        self.lock = threading.Lock()
        try:
            inside = self._recv(READY_TIMEOUT_S)
        except _Dead as exc:
            raise FlywheelError(f"the {role} contract process did not start: {exc}",
                                culprit="contracts.blind worker") from exc
        self.isolation = "+".join([*layers, *inside])

    def _recv(self, timeout: float) -> Any:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout

        def take(n: int) -> bytes:
            buf = bytearray()
            while len(buf) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    self.kill()
                    raise _Dead(f"no answer within {timeout:g} s")
                part = os.read(fd, n - len(buf))
                if not part:
                    raise _Dead(f"exited ({self.proc.wait()})")
                buf += part
            return bytes(buf)

        (n,) = struct.unpack("<Q", take(8))
        return json.loads(take(n))

    def call(self, payload: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        data = pickle.dumps(payload)
        with self.lock:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise _Dead(f"exited ({exc})") from exc
            return self._recv(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


_WORKERS: dict[str, _Worker] = {}
_START = threading.Lock()


def _worker(role: str) -> _Worker:
    with _START:
        w = _WORKERS.get(role)
        if w is None or w.proc.poll() is not None:
            w = _WORKERS[role] = _Worker(role)
        return w


def isolation(role: str = "blind") -> str:
    """The layers in force around the ``role`` process (starting it if need be), e.g.
    ``bwrap+netns+pidns+ro-system+tmpfs+uid+rlimits+seccomp``."""
    return _worker(role).isolation


def shutdown() -> None:
    with _START:
        for role in list(_WORKERS):
            _WORKERS.pop(role).close()


atexit.register(shutdown)


def _call(role: str, op: str, *args: Any) -> Any:
    reply = _worker(role).call((op, list(_FILES.items()), *args))
    if isinstance(reply, dict) and "error" in reply:
        raise FlywheelError(str(reply["error"]), culprit=str(reply.get("culprit") or f"contracts.blind {role}"))
    return reply


def load_file(path: str, text: str) -> dict[str, Any]:
    """Execute a user contract file in the blind process; its contracts' metadata and its ``SUITE`` (if any).
    Raises ``FlywheelError`` naming the file when it fails to load."""
    previous = _FILES.pop(path, None)
    try:
        info = _call("blind", "load", path, text)
    except FlywheelError:
        if previous is not None:
            _FILES[path] = previous
        raise
    _FILES[path] = text
    return info  # type: ignore[no-any-return]


def _pack(repairs: Sequence[Contract]) -> bytes:
    """The repair functions and parameters, pickled by value where the child could not import them; a user file's
    repair travels by name (the child has executed that file)."""
    for c in repairs:
        mod = sys.modules.get(getattr(c.fn, "__module__", "") or "")
        if not is_user(c) and mod is not None and not mod.__name__.startswith(("contracts.", "flywheel.",
                                                                                "solvers.")):
            cloudpickle.register_pickle_by_value(mod)  # test modules: the child cannot import them
    return cloudpickle.dumps([(c.name, None if is_user(c) else c.fn, dict(c.params)) for c in repairs])


def _chunked(role: str, op: str, head: tuple[Any, ...], items: list[Any], width: int) -> list[list[Outcome]]:
    out: list[list[Outcome]] = []
    for i in range(0, len(items), CHUNK):
        part = items[i:i + CHUNK]
        try:
            rows = _call(role, op, *head, part)
        except _Dead as exc:
            rows = [[[None, 0.0, f"the {role} contract process {exc}"]] * width for _ in part]
        if len(rows) != len(part) or any(len(r) != width for r in rows):
            raise FlywheelError(f"the {role} contract process answered {len(rows)} rows for {len(part)} samples",
                                culprit="contracts.blind worker")
        out.extend([(r, float(s), e) for r, s, e in row] for row in rows)
    return out


def run_repairs(repairs: Sequence[Contract], blinds: Sequence[BlindSample]) -> list[list[tuple[Repair | None, float,
                                                                                               str | None]]]:
    """Run ``repairs`` (in order) over each blind sample in the blind process; one list of outcomes per sample."""
    if not repairs or not blinds:
        return [[] for _ in blinds]
    rows = _chunked("blind", "repairs", (_pack(repairs),), [b.model_dump_json() for b in blinds], len(repairs))
    return [[(_parse(Repair, r, e), s, e if r is None else _err(Repair, r)) for r, s, e in row] for row in rows]


def run_checks(checks: Sequence[Contract], samples: Sequence[Sample]) -> list[list[tuple[Verdict | None, float,
                                                                                           str | None]]]:
    """Run user-file checks over each sample: plain ones in the blind process on the blind view (with the
    execution), answer-aware ones in the answer process with the ``Answer`` beside it. One list per sample, in the
    order of ``checks``."""
    out: list[list[tuple[Verdict | None, float, str | None]]] = [[None] * len(checks) for _ in samples]  # type: ignore[list-item]
    for role, aware in (("blind", False), ("answer", True)):
        idx = [i for i, c in enumerate(checks) if c.answer_aware == aware]
        if not idx or not samples:
            continue
        specs = [(checks[i].name, dict(checks[i].params), aware) for i in idx]
        items = [(s.blind(with_execution=True).model_dump_json(), s.answer().model_dump_json() if aware else None)
                 for s in samples]
        for k, row in enumerate(_chunked(role, "checks", (specs,), items, len(idx))):
            for i, (r, s, e) in zip(idx, row, strict=True):
                out[k][i] = (_parse(Verdict, r, e), s, e if r is None else _err(Verdict, r))
    return out


def _parse(kind: type[Any], raw: str | None, error: str | None) -> Any:
    if raw is None or error is not None:
        return None
    try:
        return kind.model_validate_json(raw)
    except ValueError:
        return None


def _err(kind: type[Any], raw: str) -> str | None:
    return None if _parse(kind, raw, None) is not None else f"the contract process sent a malformed {kind.__name__}"


# ---- the child ------------------------------------------------------------------------------------------------


def _exec_user_file(path: str, text: str) -> dict[str, Any]:
    """Execute a user file as its own module (the host file is not even visible here: the parent sent its text)."""
    from contracts.suites import Suite

    mod_name = module_name(path)
    for name in [n for n, c in REGISTRY.items() if c.source == mod_name]:
        del REGISTRY[name]
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)  # inspect.getsource, for the versions
    module = types.ModuleType(mod_name)
    module.__file__ = path
    sys.modules[mod_name] = module
    try:
        exec(compile(text, path, "exec"), module.__dict__)  # noqa: S102 - the point: the user's file, jailed
    except Exception as exc:
        for name in [n for n, c in REGISTRY.items() if c.source == mod_name]:
            del REGISTRY[name]
        sys.modules.pop(mod_name, None)
        if isinstance(exc, FlywheelError):
            raise
        raise FlywheelError(f"failed to load: {type(exc).__name__}: {exc}", culprit=path) from exc
    contracts = [{"name": c.name, "stage": c.stage.value, "severity": c.severity.value, "cost": c.cost,
                  "params": c.params, "description": c.description, "answer_aware": c.answer_aware,
                  "source_text": function_source(c.fn)}
                 for c in REGISTRY.values() if c.source == mod_name]
    suite = getattr(module, "SUITE", None)
    suite_info = None
    if isinstance(suite, Suite):
        suite_info = {"name": suite.name, "description": suite.description,
                      "entries": [[c.name, c.params, c.severity.value] for c in suite.contracts]}
    return {"contracts": contracts, "suite": suite_info}


class _Child:
    def __init__(self, role: str) -> None:
        self.role = role
        self.loaded: dict[str, str] = {}  # path -> sha256 of the text executed
        self.failed: dict[str, str] = {}

    def ensure(self, files: list[tuple[str, str]]) -> None:
        for path, text in files:
            digest = hashlib.sha256(text.encode()).hexdigest()
            if self.loaded.get(path) == digest:
                continue
            _exec_user_file(path, text)
            self.loaded[path] = digest

    def handle(self, op: str, files: list[tuple[str, str]], *args: Any) -> Any:
        if op == "load":
            path, text = args
            self.ensure(files)
            info = _exec_user_file(path, text)
            self.loaded[path] = hashlib.sha256(text.encode()).hexdigest()
            return info
        self.ensure(files)
        if op == "repairs" and self.role == "blind":
            return _run_chain(*args)
        if op == "checks":
            specs, items = args
            if any(aware != (self.role == "answer") for _, _, aware in specs):
                raise FlywheelError("answer-aware checks run only in the answer process", culprit="contracts.blind")
            return _run_checks(specs, items)
        raise FlywheelError(f"unknown operation {op!r} for the {self.role} process", culprit="contracts.blind")


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float, str | None]:
    start = time.perf_counter()
    try:
        res = fn(*args, **kwargs)
    except Exception as exc:  # any fault becomes a contract_error row in the parent
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return None, time.perf_counter() - start, f"{type(exc).__name__}: {exc} (line {tb.lineno})"
    return res, time.perf_counter() - start, None


def _run_chain(blob: bytes, blinds: list[str]) -> list[list[Outcome]]:
    """Every sample's repairs in order, each seeing the code the previous one produced."""
    chain = [(name, fn if fn is not None else REGISTRY[name].fn, params)
             for name, fn, params in cloudpickle.loads(blob)]
    out: list[list[Outcome]] = []
    for raw in blinds:
        blind = BlindSample.model_validate_json(raw)
        del raw
        rows: list[Outcome] = []
        for _name, fn, params in chain:
            res, seconds, error = _timed(fn, blind, **params)
            if error is None and res is not None and not isinstance(res, Repair):
                error = f"a repair must return Repair or None, got {type(res).__name__}"
            if error is not None:
                rows.append((None, seconds, error))
                continue
            rows.append((res.model_dump_json() if res is not None else None, seconds, None))
            if res is not None:
                blind = blind.model_copy(update={"attempt": blind.attempt.model_copy(update={"code": res.code})})
        out.append(rows)
    return out


def _run_checks(specs: list[tuple[str, dict[str, Any], bool]], items: list[tuple[str, str | None]]
                ) -> list[list[Outcome]]:
    fns = [(REGISTRY[name].fn, params, aware) for name, params, aware in specs]
    out: list[list[Outcome]] = []
    for raw, raw_answer in items:
        sample = BlindSample.model_validate_json(raw)
        answer = Answer.model_validate_json(raw_answer) if raw_answer is not None else None
        rows: list[Outcome] = []
        for fn, params, aware in fns:
            res, seconds, error = _timed(fn, sample, answer, **params) if aware else _timed(fn, sample, **params)
            if error is None and not isinstance(res, Verdict):
                error = f"a check must return Verdict, got {type(res).__name__}"
            rows.append((None, seconds, error) if error is not None else (res.model_dump_json(), seconds, None))
        out.append(rows)
    return out


def _serve(role: str, bwrapped: bool) -> None:
    """The child's loop: read (operation, user files, arguments), answer JSON; prints go to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer

    def send(obj: Any) -> None:
        data = json.dumps(obj).encode()
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()

    send(jail.lock_down(role, bwrapped))
    child = _Child(role)
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        (n,) = struct.unpack("<Q", head)
        op, files, *args = pickle.loads(inp.read(n))
        try:
            reply = child.handle(op, files, *args)
        except FlywheelError as exc:
            reply = {"error": exc.message if hasattr(exc, "message") else str(exc),
                     "culprit": getattr(exc, "culprit", "")}
        except Exception as exc:  # noqa: BLE001 - the parent gets one clear line, the child stays up
            reply = {"error": f"{type(exc).__name__}: {exc}", "culprit": f"contracts.blind {role}"}
        send(reply)


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)  # set by jail.command to find the parent's packages; user code never sees it
    _serve(sys.argv[1], sys.argv[2] == "bwrap")
