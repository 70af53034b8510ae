"""Solver-call capture: wrap the solve entry points of every supported solver API before user code runs.

Each ``capture/<api>.py`` module registers itself with ``@hook(api, modules)``: when one of ``modules`` is
imported (pre-imported by a warm worker, or imported later by the program), its installer wraps the solve
methods via ``patch``. A wrapper runs the real solve, then describes what the solver concluded as a
``SolveCall``-shaped dict and hands it to the sink (the sandbox's authenticated channel). Nothing here reads
stdout: a program printing "Optimal objective: 42" changes nothing.

Wrappers are reentrancy-guarded per thread: only the outermost solve call is recorded, so pyomo calling highspy,
or ``CpSolver.Solve`` calling ``CpSolver.solve``, gives one record, the one the program asked for.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import io
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from solvers.mps_names import mps_names
from solvers.statuses import SolveStatus

# Set by the sandbox child before user code runs: called with one dict per captured solve call.
_state: dict[str, Any] = {"sink": None, "mps_dir": None, "capture_mps": True, "max_solution": 100_000,
                          "overhead_s": 0.0, "threads": 0}
_guard = threading.local()
_open = io.open  # bound at import: a program that replaces builtins.open must not break the capture


@dataclass
class Hook:
    api: str
    modules: tuple[str, ...]
    install: Callable[[], None]
    installed: bool = False


HOOKS: dict[str, Hook] = {}
# (owner, attribute, wrapper) of every patch made: verify() checks each is still in place (tamper detection).
PATCHES: list[tuple[Any, str, Any]] = []
_WRAPPERS: set[int] = set()


def hook(api: str, modules: tuple[str, ...]) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register an installer for ``api``; it runs once the first of ``modules`` is importable and imported."""

    def register(install: Callable[[], None]) -> Callable[[], None]:
        HOOKS[api] = Hook(api, modules, install)
        return install

    return register


@dataclass
class Described:
    """What a solve-call describer returns; converted to a SolveCall dict by the wrapper."""

    status: SolveStatus
    solver: str = ""
    solver_version: str = ""
    objective: float | None = None
    bound: float | None = None
    mip_gap: float | None = None
    solution: dict[str, float] = field(default_factory=dict)
    n_vars: int = 0
    n_int_vars: int = 0
    n_bin_vars: int = 0
    n_constraints: int = 0
    solve_time_s: float | None = None
    model_mps: str | None = None
    sense: str | None = None
    # Data for the parent's check (solvers/sandbox/verify/), sent in the record's "verify" key and removed there:
    # CP-SAT's compact model, pyomo's "linear" verdict, "callback" / "cutoff" for a solve whose solver was asked a
    # different question than its exported model (no re-solve of its no-solution claim).
    check: dict[str, Any] | None = None


def finite(x: Any) -> float | None:
    """A float, or None for missing / NaN / infinite values (solvers report 'no bound' as +-inf or 1e100)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    if math.isnan(v) or math.isinf(v) or abs(v) >= 1e30:
        return None
    return v


def mps_path(suffix: str = ".mps") -> str | None:
    """A scratch path for an MPS export, or None when export is disabled."""
    if not _state["capture_mps"] or _state["mps_dir"] is None:
        return None
    return os.path.join(_state["mps_dir"], f".flywheel-capture-{os.getpid()}-{time.monotonic_ns()}{suffix}")


def read_and_remove(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with _open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def export_mps(write: Callable[[str], Any], suffix: str = ".mps") -> str | None:
    """The model as MPS text through the solver's own writer ``write(path)``, or None when export is disabled or
    the writer failed (e.g. general constraints MPS cannot hold: the solve record stands without the model). A
    writer that returns a string names the file it really wrote (docplex picks its own name)."""
    path = mps_path(suffix)
    if path is None:
        return None
    try:
        written = write(path)
    except Exception:
        read_and_remove(path)  # whatever it left behind is not a model anyone may trust
        return None
    return read_and_remove(written if isinstance(written, str) else path)


_SECTIONS = ("RANGES", "BOUNDS", "SOS", "QUADOBJ", "QMATRIX", "QCMATRIX", "QSECTION", "CSECTION", "INDICATORS",
             "GENCONS", "PWLOBJ", "LAZYCONS", "USERCUTS", "ENDATA")


def with_objective_constant(mps: str | None, rhs: float) -> str | None:
    """``mps`` whose objective row's RHS entry is ``rhs``: the MPS way of writing an objective constant, read as
    ``constant = -rhs`` (CPLEX's and HiGHS's convention). For exporters that drop the constant (PuLP) or write it
    with the wrong sign for a negated maximisation (docplex): the parent checks the claimed objective, constant
    included, against the model. Free-format files with one entry per RHS line, as those exporters write."""
    if not mps:
        return mps
    lines = mps.splitlines(keepends=True)
    objective = section = None
    rhs_at = end_of_rhs = None
    kept: list[str] = []
    set_name = "RHS"
    for line in lines:
        head = line.split()
        if line[:1] not in (" ", "\t") and head:
            section = head[0].upper()
            if section == "RHS":
                rhs_at = len(kept)
            elif rhs_at is not None and end_of_rhs is None:
                end_of_rhs = len(kept)
            if section in _SECTIONS and rhs_at is None and end_of_rhs is None:
                end_of_rhs = rhs_at = len(kept)  # no RHS section: one goes before the first later section
                kept.append("RHS\n")
                end_of_rhs += 1
        elif section == "ROWS" and objective is None and len(head) == 2 and head[0].upper() == "N":
            objective = head[1]
        elif section == "RHS" and len(head) >= 3:
            set_name = head[0]
            if head[1] == objective:
                continue  # replaced below
        kept.append(line)
    if objective is None or rhs_at is None:
        return mps
    if end_of_rhs is None:
        end_of_rhs = len(kept)
    if rhs != 0.0:
        kept.insert(end_of_rhs, f"    {set_name}  {objective}  {rhs!r}\n")
    return "".join(kept)


def write_mps(maximize: bool, offset: float, columns: list[tuple[str, float, float, bool, float]],
               entries: Iterable[tuple[int, int, float]], rows: list[tuple[str, float, float]]) -> str:
    """Free-format MPS with every number as Python's shortest round-trip repr, for captures that build the model
    text themselves (OR-Tools from its protos, scipy from linprog / milp's arrays). OR-Tools' own writer
    (``ExportModelAsMpsFormat``, MathOpt's ``model_proto_to_mps``) prints numbers at 6 significant digits
    (``1/12`` -> ``0.0833333``), so the parent read a different model than the program solved: an honest program with
    a cost of 123.45678912 failed the objective re-check and was called tampered.

    ``columns``: (name, lower, upper, integer, cost) in the model's order; ``entries``: the matrix's nonzeros as
    (row index, column index, coefficient), in row order; ``rows``: (name, lower, upper). Names go through ``mps_names`` (whitespace -> ``_``, unique), the
    rule the verification matches a solution's names by; the objective row is ``COST``, as OR-Tools calls it. A row
    with two finite sides is a G row with a range; a free row an N row, as OR-Tools writes it."""
    inf = float("inf")
    by_column: dict[int, list[tuple[int, float]]] = {}
    for i, j, a in entries:
        by_column.setdefault(j, []).append((i, a))
    rn = mps_names([r[0] for r in rows], frozenset({"COST"}))
    cn = mps_names([c[0] for c in columns])
    out = ["NAME", "OBJSENSE", "    MAX" if maximize else "    MIN", "ROWS", " N  COST"]
    rhs, ranges = [], []
    for name, (_, lo, up) in zip(rn, rows, strict=True):
        if lo == up:
            out.append(f" E  {name}")
            rhs.append((name, lo))
        elif lo == -inf and up == inf:
            out.append(f" N  {name}")
        elif lo == -inf:
            out.append(f" L  {name}")
            rhs.append((name, up))
        else:
            out.append(f" G  {name}")
            rhs.append((name, lo))
            if up != inf:
                ranges.append((name, up - lo))
    out.append("COLUMNS")
    bounds: list[str] = []
    in_int = False
    for j, (name, (_, lo, up, integer, cost)) in enumerate(zip(cn, columns, strict=True)):
        if integer != in_int:
            out.append(f"    MARKER 'MARKER' '{'INTORG' if integer else 'INTEND'}'")
            in_int = integer
        cells = ([("COST", cost)] if cost else []) + [(rn[i], a) for i, a in by_column.get(j, ()) if a]
        out += [f"    {name} {row} {a!r}" for row, a in cells or [("COST", 0.0)]]
        if lo == up:
            bounds.append(f" FX BND {name} {lo!r}")
        elif lo == -inf:
            bounds.append(f" {'FR' if up == inf else 'MI'} BND {name}")
        elif lo != 0 or integer or up < 0:  # integer columns always named: MPS readers default them to binary
            bounds.append(f" LO BND {name} {lo!r}")
        if lo != up and up != inf and not (lo == -inf and up == inf):
            bounds.append(f" UP BND {name} {up!r}")
        elif lo != up and integer and lo != -inf:
            bounds.append(f" PL BND {name}")
    if in_int:
        out.append("    MARKER 'MARKER' 'INTEND'")
    out.append("RHS")
    out += [f"    RHS {name} {v!r}" for name, v in rhs if v]
    if offset:
        out.append(f"    RHS COST {-offset!r}")  # the objective row's RHS is minus its constant
    if ranges:
        out.append("RANGES")
        out += [f"    RNG {name} {r!r}" for name, r in ranges]
    out += ["BOUNDS", *bounds, "ENDATA"]
    return "\n".join(out) + "\n"


def capped_solution(pairs: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    limit = _state["max_solution"]
    for name, value in pairs:
        v = finite(value)
        if v is not None:
            out[str(name)] = v
        if len(out) >= limit:
            break
    return out


# Licence-size errors of the bundled size-limited licences (gurobipy: "Model too large for size-limited license";
# CPLEX community: "1016: Community Edition. Problem size limits exceeded"; COPT: size-limited licence messages).
# docplex: "DOcplexLimitsExceeded: **** Promotional version. Problem size limits (1000 vars, 1000 consts) exceeded,
# ... CPLEX code=1016".
LICENSE_RE = re.compile(r"size-limited licen|size limited licen|limits exceeded|community edition|error\s*1016|"
                        r"code\s*=\s*1016|DOcplexLimitsExceeded|size limits? \(.*\) exceeded|"
                        r"too large for .*licen|licen[cs]e.*(size|limit)", re.IGNORECASE)


# Solver parameters that make a solver answer a different question than the exported model asks: an objective
# cutoff or limit turns "no solution better than X" into "infeasible" (SCIP limits/objective, CBC cutoff, CPLEX
# lower/uppercutoff). A solve with one is marked, and the parent does not re-solve its no-solution claim.
CUTOFF_RE = re.compile(r"cutoff|objlim|obj_lim|objective.?limit|limits/objective|bestobj|objbound|objective_bound",
                       re.IGNORECASE)


def asks_cutoff(names: Any) -> bool:
    try:
        return any(CUTOFF_RE.search(str(name)) for name in names)
    except Exception:  # options of an unexpected shape: assume the worst (only skips a re-solve)
        return True


def is_license_error(exc: BaseException) -> bool:
    return bool(LICENSE_RE.search(f"{type(exc).__name__}: {exc}"))


def license_or_error(args: tuple[Any, ...], exc: BaseException) -> Described | None:
    """Default ``describe_error``: licence-size errors become ``license_limit``; others stay ``error``."""
    return Described(status=SolveStatus.LICENSE_LIMIT if is_license_error(exc) else SolveStatus.ERROR)


def emit(record: dict[str, Any]) -> None:
    sink = _state["sink"]
    if sink is not None:
        sink(record)


def called_by_wrapper() -> bool:
    """Is the sink being called by ``emit`` from a solve wrapper (and not by a program that found the sink)?
    Frames: 0 here, 1 the sink, 2 emit, 3 the wrapper (every wrapper shares one code object)."""
    try:
        emitter, caller = sys._getframe(2), sys._getframe(3)
    except ValueError:
        return False
    return emitter.f_code is _EMIT_CODE and caller.f_code is _WRAPPER_CODE


def _to_record(api: str, d: Described, elapsed: float) -> dict[str, Any]:
    return {
        "api": api, "solver": d.solver, "solver_version": d.solver_version, "status": str(d.status),
        "objective": finite(d.objective), "bound": finite(d.bound), "mip_gap": finite(d.mip_gap),
        "solution": d.solution, "n_vars": int(d.n_vars), "n_int_vars": int(d.n_int_vars),
        "n_bin_vars": int(d.n_bin_vars), "n_constraints": int(d.n_constraints),
        "solve_time_s": float(d.solve_time_s if d.solve_time_s is not None else elapsed),
        "model_mps": d.model_mps, "sense": d.sense,
    }


def _stamped(rec: dict[str, Any], desc: Described | None, kind: str | None) -> dict[str, Any]:
    """The record with its ``verify`` key: the describer's check data, and the hook's ``kind`` over anything the
    describer said."""
    check = desc.check if desc is not None and isinstance(desc.check, dict) else None
    if kind is not None or check:
        rec["verify"] = {**(check or {}), "kind": kind}
    return rec


def wrap_solve(
    api: str,
    original: Callable[..., Any],
    describe: Callable[[tuple[Any, ...], dict[str, Any], Any], Described],
    describe_error: Callable[[tuple[Any, ...], BaseException], Described | None] | None = None,
    kind: str | None = None,
) -> Callable[..., Any]:
    """Wrap a solve entry point: run it, then emit a description of what the solver concluded.

    ``describe(args, kwargs, result)`` builds the description; if it fails, an ``error``-status record with the
    reason is emitted rather than losing the call. If the solve itself raises, ``describe_error`` may classify it
    (licence-size errors become ``license_limit``), and the exception propagates to the program unchanged.
    ``kind`` names the hook (e.g. OR-Tools' linear solver vs CP-SAT) in the record's ``verify`` key: it is fixed
    here, when the hook is installed, so that nothing the program's objects report decides which model the parent
    requires (solvers/sandbox/verify/).
    """

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_guard, "depth", 0) > 0:
            return original(*args, **kwargs)
        _guard.depth = 1
        start = time.perf_counter()
        try:
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                desc = None
                if describe_error is not None:
                    try:
                        desc = describe_error(args, exc)
                    except Exception:  # describing must never mask the program's own exception
                        desc = None
                desc = desc or Described(status=SolveStatus.ERROR)
                emit(_stamped(_to_record(api, desc, time.perf_counter() - start), desc, kind)
                     | {"error": f"{type(exc).__name__}: {exc}"[:500]})
                raise
            elapsed = time.perf_counter() - start
            try:
                desc = describe(args, kwargs, result)
                rec = _stamped(_to_record(api, desc, elapsed), desc, kind)
            except Exception as exc:  # a describer bug is recorded, never hidden
                rec = _stamped(_to_record(api, Described(status=SolveStatus.ERROR), elapsed), None, kind)
                rec["error"] = f"capture failed: {type(exc).__name__}: {exc}"[:500]
            emit(rec)
            # capture's own cost (describing, MPS export, sending) is the sandbox's, not the program's
            _state["overhead_s"] += time.perf_counter() - start - elapsed
            return result
        finally:
            _guard.depth = 0

    _WRAPPERS.add(id(wrapper))
    wrapper.__flywheel_capture__ = api  # type: ignore[attr-defined]
    return wrapper


# Taken once at import, before the child's audit hook exists (reading ``__code__`` later would raise an alarm).
_EMIT_CODE = emit.__code__
_WRAPPER_CODE = next(c for c in wrap_solve.__code__.co_consts if getattr(c, "co_name", "") == "wrapper")


def patch(owner: Any, attr: str, wrapper: Callable[..., Any]) -> None:
    setattr(owner, attr, wrapper)
    PATCHES.append((owner, attr, wrapper))


def patch_solves(
    api: str,
    owner: Any,
    names: tuple[str, ...],
    describe: Callable[[tuple[Any, ...], dict[str, Any], Any], Described],
    describe_error: Callable[[tuple[Any, ...], BaseException], Described | None] | None = license_or_error,
    kind: str | None = None,
) -> None:
    """Wrap each solve entry point ``owner.<name>`` that this version of the library has (``wrap_solve``);
    a library's licence-size errors become ``license_limit`` unless ``describe_error`` says otherwise."""
    for name in names:
        original = getattr(owner, name, None)
        if original is not None:
            patch(owner, name, wrap_solve(api, original, describe, describe_error, kind))


def verify() -> list[str]:
    """Every patch still in place? Returns one line per hook that was replaced, unwrapped or deleted."""
    problems = []
    for owner, attr, wrapper in PATCHES:
        current = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
        if isinstance(current, staticmethod | classmethod):
            current = current.__func__
        if current is not wrapper:
            name = getattr(owner, "__qualname__", getattr(owner, "__name__", repr(owner)))
            problems.append(f"{name}.{attr} was replaced")
    for hook_ in HOOKS.values():
        if hook_.installed:
            for mod in hook_.modules:
                if mod in _original_modules and sys.modules.get(mod) is not _original_modules[mod]:
                    problems.append(f"sys.modules[{mod!r}] was replaced")
    return problems


_original_modules: dict[str, Any] = {}


def install_available(preload: bool) -> list[str]:
    """Install every hook whose modules are already imported (or, with ``preload``, importable now)."""
    done = []
    for hook_ in HOOKS.values():
        if hook_.installed:
            continue
        mods_present = all(m in sys.modules for m in hook_.modules)
        if not mods_present and preload:
            try:
                for m in hook_.modules:
                    importlib.import_module(m)
                mods_present = True
            except Exception:  # a solver library that is not installed simply is not captured
                mods_present = False
        if mods_present:
            hook_.install()
            hook_.installed = True
            for m in hook_.modules:
                _original_modules[m] = sys.modules[m]
            done.append(hook_.api)
    return done


class _PostImportFinder:
    """A meta-path finder that installs a hook right after its library is imported by the program."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        watched = {m for h in HOOKS.values() if not h.installed for m in h.modules}
        if name not in watched:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        real_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            real_exec(module)
            sys.modules[name] = module
            _after_import()

        try:
            loader.exec_module = exec_module  # type: ignore[method-assign]
        except (AttributeError, TypeError):
            return spec
        return spec


def _after_import() -> None:
    for hook_ in HOOKS.values():
        if not hook_.installed and all(m in sys.modules for m in hook_.modules):
            try:
                hook_.install()
                hook_.installed = True
                for m in hook_.modules:
                    _original_modules[m] = sys.modules[m]
            except Exception:
                pass


def install_import_hook() -> None:
    sys.meta_path.insert(0, _PostImportFinder())


def load_hook_modules() -> None:
    """Import the capture/<api>.py modules so that they register; cheap (they import solver libs lazily)."""
    from solvers.sandbox.capture import (  # noqa: F401
        copt,
        cplex,
        cvxpy_,
        gurobi,
        highs,
        ortools,
        pulp_,
        pyomo_,
        scip,
        scipy_,
    )


def configure(sink: Callable[[dict[str, Any]], None] | None, mps_dir: str | None, capture_mps: bool,
              max_solution: int, threads: int = 0) -> None:
    _state.update(sink=sink, mps_dir=mps_dir, capture_mps=capture_mps, max_solution=max_solution, overhead_s=0.0,
                  threads=threads)


def overhead_s() -> float:
    return float(_state["overhead_s"])


def is_wrapper(obj: Any) -> bool:
    return id(obj) in _WRAPPERS
