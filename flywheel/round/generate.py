"""Stage ``generate``: problems with ground truth and reference programs, or the problems of a ``--problems-file``.

Generation runs in a fork-based process pool (workers inherit the imported solvers); each committed batch writes
``round_items`` last, because its row is what marks an item generated.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from flywheel.generators.base import family_names
from flywheel.round.context import COMMIT_SECONDS, RoundContext, commit_every, infra_error_row, one_line
from flywheel.store.lineage import environment
from flywheel.store.rows import attempt_row, problem_row
from solvers.ground_truth import solve_ground_truth
from solvers.records import canonical_json, content_hash
from solvers.render import APIS, render, supports
from solvers.stdout import fd1_redirected


def _generate_item(task: tuple[int, str, int, int | None, float, str]) -> dict[str, Any]:
    """Worker: one problem with ground truth and its reference programs, as store rows. Runs in a process pool."""
    from flywheel.generators.base import generate_problem
    from solvers.records import GroundTruth, SolveStatus

    idx, family, seed, difficulty, share, api = task
    errors: list[dict[str, Any]] = []
    problem = generate_problem(family, seed, difficulty, share)
    try:
        gt = solve_ground_truth(problem.ir)  # type: ignore[arg-type]
    except Exception as exc:  # a ground-truth fault is stored and reported, never silently dropped
        gt = GroundTruth(status=SolveStatus.ERROR, dispute_reason=f"ground truth failed: {one_line(exc)}")
        errors.append({"stage": "ground_truth", "kind": type(exc).__name__, "message": one_line(exc)})
    programs: dict[str, str] = {}
    if problem.ir is not None and not supports(problem.ir, api):
        # e.g. ortools has no usable QP solver here: the reference program goes to the next API that has one
        api = next((a for a in APIS if supports(problem.ir, a)), api)
    for a in APIS:
        try:
            programs[a] = render(problem.ir, a, problem.question)  # type: ignore[arg-type]
        except Exception as exc:
            if a == api:
                errors.append({"stage": "render", "kind": type(exc).__name__,
                               "message": f"{a}: {one_line(exc)}"})
    problem = problem.model_copy(update={"ground_truth": gt, "reference_programs": programs})
    code = programs.get(api)
    attempt = None
    if code is not None:
        attempt = reference_attempt(problem.problem_id, api, code)
    return {"idx": idx, "api": api, "problem": problem_row(problem), "attempt": attempt, "errors": errors,
            "disputed": gt.disputed, "dispute_reason": gt.dispute_reason}


def stage_load_file(ctx: RoundContext) -> Iterator[int]:
    """Problems from a ``--problems-file`` (no IR, so no ground-truth solve and no reference program; a known
    answer is their ground truth): stored as they are, in file order, as the round's items."""
    from flywheel.policies import load_problems_file

    plan, store, r = ctx.plan, ctx.store, ctx.round
    problems = load_problems_file(plan.problems_file)  # type: ignore[arg-type]
    done = {x["idx"] for x in store.query("SELECT idx FROM round_items WHERE round = ?", [r]).to_pylist()}
    ctx.set_total("generate", len(problems))
    ctx.advance("generate", len(done))
    todo = [(i, p) for i, p in enumerate(problems) if i not in done]
    step = commit_every(len(problems))
    for start in range(0, len(todo), step):
        chunk = todo[start:start + step]
        store.write("problems", r, [problem_row(p) for _, p in chunk])
        store.write("round_items", r, [{"idx": i, "problem_id": p.problem_id, "family": p.family, "seed": p.seed,
                                        "api": plan.item(i)[2], "attempt_id": None} for i, p in chunk])
        ctx.advance("generate", len(chunk))
        yield len(chunk)


def reference_attempt(problem_id: str, api: str, code: str) -> dict[str, Any]:
    """The attempt row of a generator's reference program (policy "reference", label_source "generator")."""
    from solvers.records import Attempt

    attempt_id = content_hash(canonical_json([problem_id, "reference", "", 0, code]))
    attempt = Attempt(attempt_id=attempt_id, problem_id=problem_id, policy="reference", api=api, response=code,
                      code=code, label_source="generator")
    return attempt_row(attempt)


def stage_generate(ctx: RoundContext) -> Iterator[int]:
    if ctx.plan.problems_file is not None:
        yield from stage_load_file(ctx)
        return
    plan, store = ctx.plan, ctx.store
    done = {r["idx"] for r in store.query("SELECT idx FROM round_items WHERE round = ?", [ctx.round]).to_pylist()}
    todo = [i for i in range(plan.problems) if i not in done]
    ctx.set_total("generate", plan.problems)
    ctx.advance("generate", len(done))
    if not todo:
        return
    tasks = [(i, *plan.item(i)[:2], plan.difficulty, plan.infeasible_share, plan.item(i)[2]) for i in todo]
    env = environment()
    batch: list[dict[str, Any]] = []
    last = time.monotonic()
    _warm_imports()
    with _pool(ctx.workers if plan.backend == "local" else 1, len(tasks)) as pool:
        if plan.backend == "ray":
            from flywheel.round.ray_generate import map_items

            results = map_items(tasks, plan.address)
        else:
            results = pool.map(_generate_item, tasks, chunksize=chunk_size(len(tasks), ctx.workers)) if pool \
                else map(_generate_item, tasks)
        for res in results:
            batch.append(res)
            ctx.advance("generate", 1)
            if len(batch) >= generate_commit_every(plan.problems) or time.monotonic() - last > COMMIT_SECONDS:
                _commit_generated(ctx, batch, env)
                yield len(batch)
                batch, last = [], time.monotonic()
    if batch:
        _commit_generated(ctx, batch, env)
        yield len(batch)


def chunk_size(n_tasks: int, workers: int) -> int:
    """Tasks per pool message: one problem takes ~20-40 ms, so one pipe round trip per problem is overhead; chunks
    of up to 16 keep ~4 chunks per worker in a small round, so no worker idles at the end."""
    return max(1, min(16, n_tasks // (4 * max(1, workers))))


def generate_commit_every(n_items: int) -> int:
    """Problems per committed batch of this stage: ``commit_every`` for small rounds (they commit often, as the
    resume tests expect), up to 500 for large ones. A commit costs the parent ~0.3-0.5 CPU s whatever its size
    (measured: 32 rows 15 CPU ms per problem, 256 rows 1.3), and the parent shares the two cores with the workers:
    10,000 problems in batches of 32 spent more CPU committing than one worker spent generating. 500 problems are
    ~10 s of work to redo after a crash, which COMMIT_SECONDS bounds anyway."""
    return max(commit_every(n_items), min(500, n_items // 20))


def _commit_generated(ctx: RoundContext, batch: list[dict[str, Any]], env: dict[str, Any]) -> None:
    """Write one batch; round_items last, because its row is what marks an item generated."""
    r, store = ctx.round, ctx.store
    store.write("problems", r, [b["problem"] for b in batch])
    disputes = [{"dispute_id": content_hash(canonical_json([b["problem"]["problem_id"], "ground_truth"])),
                 "sample_id": "", "problem_id": b["problem"]["problem_id"], "contract": "ground_truth",
                 "kind": "solver_disagreement", "message": b["dispute_reason"]} for b in batch if b["disputed"]]
    if disputes:
        store.write("disputes", r, disputes)
    attempts = []
    for b in batch:
        if b["attempt"] is not None:
            p = b["problem"]
            lineage = {
                "generator": {"family": p["family"], "version": p["generator_version"],
                              "code_hash": p["generator_code_hash"], "seed": p["seed"],
                              "params_hash": content_hash(p["params_json"])},
                "policy": "reference", "prompt_template": "", "sampling": {},
                "round": r, "round_config_hash": ctx.plan.config_hash, "env": env,
            }
            attempts.append({**b["attempt"], "lineage_json": canonical_json(lineage)})
    if attempts:
        store.write("attempts", r, attempts)
    errors = [infra_error_row([r, b["idx"], e], e["stage"], e["kind"], e["message"],
                              problem_id=b["problem"]["problem_id"], policy="reference")
              for b in batch for e in b["errors"]]
    if errors:
        store.write("infra_errors", r, errors)
    store.write("round_items", r, [{"idx": b["idx"], "problem_id": b["problem"]["problem_id"],
                                    "family": b["problem"]["family"], "seed": b["problem"]["seed"],
                                    "api": b["api"], "attempt_id": (b["attempt"] or {}).get("attempt_id")}
                                   for b in batch])


def _warm_imports() -> None:
    """Import the heavy modules once in the parent, so forked workers start with them loaded (this package's own
    ground truth and renderers are imported at the top of this module; the solver libraries behind them here)."""
    import importlib

    for name in ("highspy", "gurobipy", "ortools.linear_solver.pywraplp"):
        try:
            importlib.import_module(name)
        except ImportError:  # a solver library missing from this machine: its first program pays the import
            pass
    family_names()


def _pool(workers: int, n_tasks: int) -> Any:
    """A fork-based process pool (workers inherit the imported solvers: no per-worker import cost), or none for
    one worker or a tiny batch, where pool start-up would cost more than it saves."""
    if workers <= 1 or n_tasks <= 2:
        return contextlib.nullcontext()
    return ProcessPoolExecutor(max_workers=min(workers, n_tasks), mp_context=get_context("fork"),
                               initializer=_quiet_worker)


# A pool worker's fd 1 stays redirected for its whole life: the stack is never closed (the process just ends).
_WORKER_STDOUT = contextlib.ExitStack()


def _quiet_worker() -> None:
    """Solver libraries print banners straight to fd 1 (HiGHS does); in a pool worker that would tear the
    progress bar, and the worker's results travel by pipe, not stdout."""
    _WORKER_STDOUT.enter_context(fd1_redirected())
