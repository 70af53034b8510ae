"""Real-world programs nobody here wrote (../shared/code_samples): does the sandbox reproduce published objectives?

Each set's calling convention comes from its SOURCE.md: NLP4LP programs open ``parameters.json`` at a hard-coded
absolute path (we place the file in the working directory and map the path); ComplexOR programs are functions
called with ``sample_input``. Run as a script for the per-set report:
``.venv/bin/python tests/test_sandbox_samples.py``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from solvers.records import ExecStatus, Execution
from solvers.sandbox import Program, SandboxConfig, run_batch

SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "code_samples"
# Relative tolerance for "reproduces the published objective": the sources print 4-6 significant digits and the
# solvers stop at a 1e-4 relative MIP gap (Gurobi's default MIPGap), so 1e-4 is the tightest honest comparison.
RTOL = 1e-4
ABS_PATH = re.compile(r"""(["'])(?:[A-Za-z]:)?/[^"'\n]*?parameters\.json\1""")
# 60 s per program is the protocol of the published reproduction check (ORThought's SOURCE.md). A handful of the
# programs are hard MIPs that need most of it on a loaded 2-core machine, so programs run first with a 20 s limit
# and only those that hit it run again with the full 60 s, on as many workers as cores (running them all at once
# would split the CPU between them and turn the 60 s into far less solver time each).
# Solvers keep their own thread defaults (solver_threads=0), as in the published runs.
CONFIG = SandboxConfig(timeout_s=20.0, capture_mps=False, preload=("numpy", "gurobipy"), solver_threads=0)
RETRY_CONFIG = CONFIG.model_copy(update={"timeout_s": 60.0})
INFEASIBLE_TRUTHS = {"infeasible", "infeasible or unbounded", "unbounded"}


def load(name: str) -> list[dict[str, Any]]:
    path = SAMPLES / name / "samples.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def to_program(set_name: str, row: dict[str, Any]) -> Program:
    code = row.get("code") or ""
    if set_name == "nlp4lp_optimus_reference_code":
        return Program(program_id=row["id"], code=ABS_PATH.sub('"parameters.json"', code),
                       files={"parameters.json": json.dumps(row["parameters"])})
    if set_name == "complexor_reference_code":
        return Program(program_id=row["id"], code=code, entry=row["complexor_id"], args=row["sample_input"])
    return Program(program_id=row["id"], code=code)


def answer(execution: Execution) -> float | None:
    """The program's answer: a function-style program's return value, else its final solve's objective."""
    if isinstance(execution.returned, int | float) and not isinstance(execution.returned, bool):
        return float(execution.returned)
    return execution.objective


def reproduces(value: float | None, truth: Any) -> bool:
    try:
        t = float(truth)
    except (TypeError, ValueError):
        return False
    # The absolute floor of 1e-6 only matters for a published objective of 0.
    return value is not None and math.isfinite(value) and abs(value - t) <= RTOL * max(1.0, abs(t)) + 1e-6


Results = list[tuple[dict[str, Any], Execution]]


def run_set(set_name: str, limit: int | None = None,
            enough: Callable[[dict[str, Any]], bool] | None = None) -> Results:
    """Every program of the set, with the 20 s pass and the 60 s retry of the programs that hit the limit.

    ``enough`` (a test's lower-bound assertions, on ``summarise``'s summary of the first pass) skips the retry when
    it already holds: a retried program was a timeout, which reproduces nothing, so its retry can only add
    reproductions, never turn a passing bound into a failing one. The retry of orthought's hard MIPs was 60-180 s of
    the suite (5 of its 6 still time out at 60 s on a 2-core machine); the script (``__main__``) always retries."""
    rows = load(set_name)[:limit]
    programs = [to_program(set_name, r) for r in rows]
    config = CONFIG if set_name != "or_instruct_samples" else CONFIG.model_copy(update={"preload": ("coptpy",)})
    executions = list(run_batch(programs, config))
    slow = [i for i, e in enumerate(executions) if e.status == ExecStatus.TIMEOUT_WALL]
    if slow and enough is not None and enough(summarise(set_name, list(zip(rows, executions, strict=True)))):
        slow = []
    if slow:
        retry = config.model_copy(update={"timeout_s": RETRY_CONFIG.timeout_s})
        for i, e in zip(slow, run_batch([programs[i] for i in slow], retry), strict=True):
            executions[i] = e
    return list(zip(rows, executions, strict=True))


def matches(row: dict[str, Any], execution: Execution) -> bool:
    """Numeric truths: the objective within RTOL. 'infeasible (or unbounded)' truths: the solver said so."""
    truth = row.get("ground_truth")
    if isinstance(truth, str) and truth.strip().lower() in INFEASIBLE_TRUTHS:
        return execution.status in (ExecStatus.SOLVER_INFEASIBLE, ExecStatus.SOLVER_UNBOUNDED)
    return reproduces(answer(execution), truth)


def summarise(set_name: str, results: Results) -> dict[str, Any]:
    with_truth = [(r, e) for r, e in results if r.get("ground_truth") not in (None, "")]
    ok = [(r, e) for r, e in with_truth if matches(r, e)]
    numeric = [(r, e) for r, e in with_truth if not isinstance(r["ground_truth"], str)]
    misses = Counter(str(e.status) if e.status != ExecStatus.OK else "objective_mismatch"
                     for r, e in with_truth if (r, e) not in ok)
    return {"set": set_name, "programs": len(results), "with_truth": len(with_truth), "reproduced": len(ok),
            "numeric_truth": len(numeric), "numeric_reproduced": sum(1 for x in numeric if x in ok),
            "statuses": dict(Counter(str(e.status) for _, e in results)), "non_reproducing": dict(misses)}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def _orthought_bounds(summary: dict[str, Any]) -> bool:
    # the published careful re-execution: 415 / 432; and the 9 programs whose published answer is "infeasible (or
    # unbounded)": the solver says so in each
    return summary["numeric_reproduced"] >= 415 and (
        summary["reproduced"] - summary["numeric_reproduced"] == summary["with_truth"] - 432)


def test_orthought_reproduces_published_objectives() -> None:
    results = run_set("orthought_reference_code", enough=_orthought_bounds)
    summary = summarise("orthought_reference_code", results)
    assert summary["numeric_truth"] == 432
    assert _orthought_bounds(summary), summary
    # every program got a definite classification; none was lost to the sandbox itself
    assert ExecStatus.SANDBOX_ERROR not in {e.status for _, e in results}, summary


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_nlp4lp_reproduces_published_objectives() -> None:
    results = run_set("nlp4lp_optimus_reference_code", enough=lambda s: s["reproduced"] >= 241)
    summary = summarise("nlp4lp_optimus_reference_code", results)
    assert summary["with_truth"] == 242
    assert summary["reproduced"] >= 241, summary


def test_complexor_function_style_programs_reproduce() -> None:
    results = run_set("complexor_reference_code", enough=lambda s: s["reproduced"] >= 10)
    summary = summarise("complexor_reference_code", results)
    # Measured: 10 / 18. The other 8 are the source's own faults, each classified: 4 return a different optimum
    # than the published one (cell_tower, dietu_problem, prod, steel4), 2 crash on their own sample_input
    # (model_build_error), 1 never calls the solver in its entry function, 1 is infeasible on its sample input.
    assert summary["reproduced"] >= 10, summary
    assert summary["statuses"].get("sandbox_error", 0) == 0


@pytest.mark.slow
def test_or_instruct_coptpy_programs_run() -> None:
    results = run_set("or_instruct_samples", limit=120)
    statuses = Counter(e.status for _, e in results)
    copt_solves = [s for _, e in results for s in e.solves if s.api == "coptpy"]
    assert statuses[ExecStatus.OK] >= 100, statuses  # model-written code: most, not all, runs to an optimum
    assert len(copt_solves) >= 100 and all(s.solver == "copt" for s in copt_solves)
    assert statuses[ExecStatus.SANDBOX_ERROR] == 0


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("-")] or sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
    for name in names:
        res = run_set(name)
        print(json.dumps(summarise(name, res)))
        if "-v" in sys.argv:
            for r, e in res:
                if r.get("ground_truth") not in (None, "") and not matches(r, e):
                    print("  ", r["id"], e.status, answer(e), r["ground_truth"], e.error[:120])


def test_pyomo_examples_reproduce_or_name_the_missing_solver() -> None:
    """The five LLMOPT/MiniOpt Pyomo programs with a published objective call glpk or cbc through SolverFactory:
    where those executables are installed (apt: glpk-utils, coinor-cbc) all five reproduce; where they are not,
    each is an import_error (missing from the environment), never a model error."""
    import shutil

    results = run_set("pyomo_examples_llmopt_miniopt")
    summary = summarise("pyomo_examples_llmopt_miniopt", results)
    with_truth = [(r, e) for r, e in results if r.get("ground_truth") not in (None, "")]
    if shutil.which("glpsol") and shutil.which("cbc"):
        assert summary["reproduced"] == 5, summary
    else:
        assert all(matches(r, e) or e.status == ExecStatus.IMPORT_ERROR for r, e in with_truth), summary
    assert summary["statuses"].get("sandbox_error", 0) == 0
