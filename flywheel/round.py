"""A round: generate problems, ground-truth them, render and run their reference programs, check, store.

A round is a sequence of idempotent stages over items (problem ``i`` of the round). Each stage asks the store what
is still pending, does only that, and commits in small batches; the commit marker of an item is the row written
last (``round_items`` for generation, ``executions`` for execution, ``verdicts`` for contracts). Kill the process
at any point (SIGKILL included), run the same command again: the round is found by its config hash, resumed, and
completes with no sample lost or stored twice (every write is idempotent by content key).

Extension point for policies: a stage is any callable ``stage(ctx) -> Iterator[int]`` in ``STAGES`` (it yields
how many items it finished, for the progress bar). A policy stage would write ``attempts`` rows with this round
number; ``execute`` then runs every attempt of the round that has no execution, whoever wrote it.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from flywheel.config import SOLVER_APIS, FlywheelConfig
from flywheel.generators.base import derive_seed, family_names, get_family
from flywheel.store import Store
from flywheel.store.lineage import environment
from flywheel.store.rows import attempt_row, execution_row, problem_row, solve_rows
from solvers.errors import ConfigError, unknown_name
from solvers.records import canonical_json, content_hash

COMMIT_SECONDS = 10.0  # commit at least this often: at most this much work is redone after a crash


def commit_every(n_items: int) -> int:
    """Items per committed batch: about a dozen commits per stage, 1..32 items each. Each commit writes a few
    small Parquet parts (~0.1 s), so small rounds commit every item and large ones amortise the cost."""
    return max(1, min(32, n_items // 12))


@dataclass(frozen=True)
class RoundPlan:
    """Everything that decides a round's content. Its hash identifies the round: same plan -> same round."""

    problems: int
    families: tuple[str, ...]
    seed: int
    difficulty: int | None
    infeasible_share: float
    api: str  # one of SOLVER_APIS, or "rotate"
    sandbox: dict[str, Any] = field(default_factory=dict)
    suite: str | None = None  # contract suite run after execution; None = the default suite if one exists
    policy: str | None = None  # policy spec (flywheel.policies); None = reference programs only
    samples: int = 1  # policy samples per problem
    temperature: float = 0.7
    policy_settings: dict[str, Any] = field(default_factory=dict)  # the config's [policy] section
    problems_file: str | None = None  # benchmark-shaped JSONL instead of generated problems
    problems_file_hash: str = ""  # its content: the same path with new content is a new round

    @classmethod
    def from_config(cls, cfg: FlywheelConfig, suite: str | None = None, policy: str | None = None,
                    samples: int = 1, temperature: float = 0.7, problems_file: str | None = None) -> RoundPlan:
        """Validate names (families, API, the problems file) up front, so bad input fails before the store is
        touched."""
        file_hash, n_problems = "", cfg.round.problems
        if problems_file is not None:
            from flywheel.policies import load_problems_file

            loaded = load_problems_file(problems_file)  # a bad line raises ConfigError naming FILE:LINE
            if not loaded:
                raise ConfigError("the problems file holds no problems", culprit=problems_file)
            file_hash = content_hash(canonical_json([p.model_dump(mode="json") for p in loaded]))
            n_problems = len(loaded)
            families = tuple(sorted({p.family for p in loaded}))
        else:
            families = tuple(cfg.round.families) or tuple(family_names())
            for name in families:
                get_family(name)  # raises UnknownNameError naming the family and the nearest known one
        if len(set(families)) != len(families):
            raise ConfigError("a family is listed twice", culprit="--families")
        if cfg.round.api != "rotate" and cfg.round.api not in SOLVER_APIS:
            raise unknown_name("solver API", cfg.round.api, [*SOLVER_APIS, "rotate"])
        if policy is not None:
            if samples < 1:
                raise ConfigError("samples must be at least 1", culprit="--samples")
            if temperature < 0:
                raise ConfigError("temperature must be >= 0", culprit="--temperature")
            from flywheel.policies import parse_spec

            parse_spec(policy)  # an unknown backend scheme fails here, before the store is touched
        settings = cfg.policy.model_dump(mode="json") if policy is not None and hasattr(cfg, "policy") else {}
        return cls(problems=n_problems, families=families, seed=cfg.round.seed,
                   difficulty=cfg.round.difficulty, infeasible_share=cfg.round.infeasible_share,
                   api=cfg.round.api, sandbox=cfg.sandbox.model_dump(mode="json"), suite=suite, policy=policy,
                   samples=samples if policy else 1, temperature=temperature if policy else 0.0,
                   policy_settings=settings, problems_file=str(problems_file) if problems_file else None,
                   problems_file_hash=file_hash)

    def to_json(self) -> dict[str, Any]:
        out = {"problems": self.problems, "families": list(self.families), "seed": self.seed,
               "difficulty": self.difficulty, "infeasible_share": self.infeasible_share, "api": self.api,
               "sandbox": self.sandbox, "suite": self.suite}
        if self.problems_file is not None:
            out |= {"problems_file": self.problems_file, "problems_file_hash": self.problems_file_hash}
        if self.policy is not None:  # reference-only rounds keep the hash they always had
            out |= {"policy": self.policy, "samples": self.samples, "temperature": self.temperature,
                    "policy_settings": self.policy_settings}
        return out

    @property
    def config_hash(self) -> str:
        return content_hash(canonical_json(self.to_json()))

    def item(self, idx: int) -> tuple[str, int, str]:
        """(family, seed, api) of item ``idx``: families round-robin, APIs rotating independently."""
        family = self.families[idx % len(self.families)]
        api = SOLVER_APIS[idx % len(SOLVER_APIS)] if self.api == "rotate" else self.api
        return family, derive_seed(self.seed, idx), api


@dataclass
class RoundContext:
    store: Store
    plan: RoundPlan
    round: int
    workers: int
    advance: Callable[[str, int], None]  # (stage, n finished)
    set_total: Callable[[str, int], None]
    notes: list[str] = field(default_factory=list)


# ---- stage 1: generate + ground truth + reference programs ---------------------------------------------------


def _generate_item(task: tuple[int, str, int, int | None, float, str]) -> dict[str, Any]:
    """Worker: one problem with ground truth and its reference programs, as store rows. Runs in a process pool."""
    from flywheel.generators.base import generate_problem
    from solvers.records import GroundTruth, SolveStatus

    idx, family, seed, difficulty, share, api = task
    errors: list[dict[str, Any]] = []
    problem = generate_problem(family, seed, difficulty, share)
    try:
        from solvers.ground_truth import solve_ground_truth

        gt = solve_ground_truth(problem.ir)  # type: ignore[arg-type]
    except Exception as exc:  # a ground-truth fault is stored and reported, never silently dropped
        gt = GroundTruth(status=SolveStatus.ERROR, dispute_reason=f"ground truth failed: {_one_line(exc)}")
        errors.append({"stage": "ground_truth", "kind": type(exc).__name__, "message": _one_line(exc)})
    programs: dict[str, str] = {}
    try:
        from solvers.render import APIS, render, supports

        if problem.ir is not None and not supports(problem.ir, api):
            # e.g. ortools has no usable QP solver here: the reference program goes to the next API that has one
            api = next((a for a in APIS if supports(problem.ir, a)), api)

        for a in APIS:
            try:
                programs[a] = render(problem.ir, a, problem.question)  # type: ignore[arg-type]
            except Exception as exc:
                if a == api:
                    errors.append({"stage": "render", "kind": type(exc).__name__,
                                   "message": f"{a}: {_one_line(exc)}"})
    except ImportError as exc:
        errors.append({"stage": "render", "kind": "ImportError", "message": _one_line(exc)})
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
    with _pool(ctx.workers, len(tasks)) as pool:
        results = pool.map(_generate_item, tasks, chunksize=1) if pool else map(_generate_item, tasks)
        for res in results:
            batch.append(res)
            ctx.advance("generate", 1)
            if len(batch) >= commit_every(plan.problems) or time.monotonic() - last > COMMIT_SECONDS:
                _commit_generated(ctx, batch, env)
                yield len(batch)
                batch, last = [], time.monotonic()
    if batch:
        _commit_generated(ctx, batch, env)
        yield len(batch)


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
    errors = [{"error_id": content_hash(canonical_json([r, b["idx"], e])), "stage": e["stage"],
               "problem_id": b["problem"]["problem_id"], "attempt_id": None, "policy": "reference",
               "kind": e["kind"], "message": e["message"], "event_at": _now()} for b in batch for e in b["errors"]]
    if errors:
        store.write("infra_errors", r, errors)
    store.write("round_items", r, [{"idx": b["idx"], "problem_id": b["problem"]["problem_id"],
                                    "family": b["problem"]["family"], "seed": b["problem"]["seed"],
                                    "api": b["api"], "attempt_id": (b["attempt"] or {}).get("attempt_id")}
                                   for b in batch])


# ---- stage 1b: policy samples (only when the round names a policy) ------------------------------------------------


def stage_policy(ctx: RoundContext) -> Iterator[int]:
    """K policy samples per problem of the round, through the policy's response cache (in the store directory,
    so a resumed round re-asks nothing it already got). Committed per batch of problems: attempts, then the
    infrastructure failures (never counted against the model; asked again on the next run)."""
    plan, store, r = ctx.plan, ctx.store, ctx.round
    if plan.policy is None:
        return
    from flywheel.config import PolicySection
    from flywheel.policies import generate_attempts
    from flywheel.store.rows import problem_from_row

    items = store.query(
        """
        SELECT i.idx, i.api, p.*, (SELECT count(*) FROM attempts a
                                   WHERE a.problem_id = i.problem_id AND a.policy = $policy) AS have
        FROM round_items i JOIN problems p USING (problem_id) WHERE i.round = $r ORDER BY i.idx
        """, {"r": r, "policy": plan.policy}).to_pylist()
    ctx.set_total("policy", len(items))
    pending = [it for it in items if it["have"] < plan.samples]
    ctx.advance("policy", len(items) - len(pending))
    settings = PolicySection(**plan.policy_settings)
    step = commit_every(len(items))
    env = environment()
    for start in range(0, len(pending), step):
        chunk = pending[start:start + step]
        by_api: dict[str, list[dict[str, Any]]] = {}
        for it in chunk:
            api = plan.api if plan.api != "rotate" else plan.item(it["idx"])[2]
            by_api.setdefault(api, []).append(it)
        attempts, errors = [], []
        for api, group in by_api.items():
            run = generate_attempts([problem_from_row(it) for it in group], plan.policy, samples=plan.samples,
                                    temperature=plan.temperature, api=api, round_id=r, cache_dir=store.root,
                                    progress=False, settings=settings)
            families = {it["problem_id"]: it for it in group}
            for a in run.attempts:
                p = families[a.problem_id]
                lineage = {"generator": {"family": p["family"], "version": p["generator_version"],
                                         "code_hash": p["generator_code_hash"], "seed": p["seed"]},
                           "policy": plan.policy, "prompt_template": a.prompt_template, "prompt_hash": a.prompt_hash,
                           "sampling": a.sampling, "details": run.details.get(a.attempt_id, {}), "round": r,
                           "round_config_hash": plan.config_hash, "env": env}
                attempts.append(attempt_row(a, lineage))
            for e in run.infra_errors:
                errors.append({"error_id": content_hash(canonical_json([r, e, time.time()])), "stage": "policy",
                               "problem_id": e.get("problem_id"), "attempt_id": None, "policy": plan.policy,
                               "kind": str(e.get("kind", "")), "message": str(e.get("message", ""))[:2000],
                               "event_at": _now()})
        if attempts:
            store.write("attempts", r, attempts)
        if errors:
            store.write("infra_errors", r, errors)
            ctx.notes.append(f"policy: {len(errors)} request(s) failed (infra_errors); rerun to ask again")
        ctx.advance("policy", len(chunk))
        yield len(chunk)


# ---- stage 2: execute every attempt of the round that has no execution ------------------------------------------


def pending_attempts(store: Store, round: int) -> list[dict[str, Any]]:
    """Attempts of ``round`` (its reference programs and any policy samples) not executed yet, in item order."""
    return store.query(
        """
        WITH mine AS (
            SELECT attempt_id, idx AS ord FROM round_items WHERE round = $r AND attempt_id IS NOT NULL
            UNION ALL
            SELECT attempt_id, 1e12 + sample_index AS ord FROM attempts WHERE round = $r AND policy <> 'reference'
        )
        SELECT a.attempt_id, a.code, a.api, min(m.ord) AS ord
        FROM mine m JOIN attempts a USING (attempt_id)
        WHERE a.attempt_id NOT IN (SELECT attempt_id FROM executions)
        GROUP BY ALL ORDER BY ord, a.attempt_id
        """, {"r": round}).to_pylist()


def _sandbox_config(plan: RoundPlan) -> Any:
    from solvers.sandbox import SandboxConfig

    s = plan.sandbox
    kwargs: dict[str, Any] = {"timeout_s": s.get("timeout_s", 20.0), "memory_mb": s.get("memory_mb", 2048)}
    if s.get("cpu_s") is not None:
        kwargs["cpu_s"] = max(1, int(round(s["cpu_s"])))
    if s.get("license_file"):
        kwargs["license_files"] = {"GRB_LICENSE_FILE": s["license_file"]}
    return SandboxConfig(**kwargs)


def stage_execute(ctx: RoundContext) -> Iterator[int]:
    store = ctx.store
    pending = pending_attempts(store, ctx.round)
    total = int(store.scalar("SELECT count(attempt_id) FROM round_items WHERE round = ?", [ctx.round]) or 0)
    total += int(store.scalar("SELECT count(*) FROM attempts WHERE round = ? AND policy <> 'reference'",
                              [ctx.round]) or 0)
    ctx.set_total("execute", total)
    ctx.advance("execute", total - len(pending))
    if not pending:
        return
    from solvers.sandbox import Program, run_batch

    config = _sandbox_config(ctx.plan)
    programs = [Program(program_id=p["attempt_id"], code=p["code"] or "") for p in pending]
    batch: list[tuple[str, Any]] = []
    last = time.monotonic()
    for p, execution in zip(pending, run_batch(programs, config, workers=ctx.workers), strict=True):
        batch.append((p["attempt_id"], execution))
        ctx.advance("execute", 1)
        if len(batch) >= commit_every(total) or time.monotonic() - last > COMMIT_SECONDS:
            _commit_executed(ctx, batch)
            yield len(batch)
            batch, last = [], time.monotonic()
    if batch:
        _commit_executed(ctx, batch)
        yield len(batch)


def _commit_executed(ctx: RoundContext, batch: list[tuple[str, Any]]) -> None:
    """Solves first, executions last (an execution row marks its attempt done). A ``sandbox_error`` after the
    sandbox's own retries is infrastructure: logged in infra_errors, not stored as an execution, so the next run
    of the same command retries it instead of counting it against the program."""
    r, store = ctx.round, ctx.store
    ok = [(a, e) for a, e in batch if e.status.value != "sandbox_error"]
    infra = [(a, e) for a, e in batch if e.status.value == "sandbox_error"]
    solves = [row for a, e in ok for row in solve_rows(a, e)]
    if solves:
        store.write("solves", r, solves)
    if infra:
        store.write("infra_errors", r, [
            {"error_id": content_hash(canonical_json([r, a, e.error, time.time()])), "stage": "execute",
             "problem_id": None, "attempt_id": a, "policy": None, "kind": "sandbox_error", "message": e.error,
             "event_at": _now()} for a, e in infra])
        ctx.notes.append(f"{len(infra)} sandbox infrastructure error(s); rerun the same command to retry them")
    if ok:
        store.write("executions", r, [execution_row(a, e) for a, e in ok])


# ---- stage 3: contracts --------------------------------------------------------------------------------------


def resolve_suite(name: str | None, notes: list[str] | None = None) -> Any | None:
    """The contract suite to run, or None when none is asked for and the contracts package offers no default
    (then the stage is skipped, with a note saying why). A suite asked for by name must load."""
    try:
        from contracts.suites import load_suite, suite_names

        if name is not None:
            return load_suite(name)
        if "default" not in suite_names():
            if notes is not None:
                notes.append("contracts: no 'default' suite registered; stage skipped")
            return None
        return load_suite("default")
    except ImportError as exc:
        if name is not None:
            raise
        if notes is not None:
            notes.append(f"contracts: package not importable ({_one_line(exc)}); stage skipped")
        return None


def stage_contracts(ctx: RoundContext) -> Iterator[int]:
    """Run the suite over every executed sample of the round without verdicts from that suite. Hook: skipped
    (and said so in the summary) when the contracts package has no suite to run."""
    suite = resolve_suite(ctx.plan.suite, ctx.notes)
    if suite is None:
        return
    from contracts.engine import run_suite
    from contracts.sample import Sample
    from flywheel.store.rows import attempt_from_row, execution_from_rows, problem_from_row

    store, r = ctx.store, ctx.round
    rows = store.query(
        """
        WITH mine AS (SELECT attempt_id FROM round_items WHERE round = $r AND attempt_id IS NOT NULL
                      UNION SELECT attempt_id FROM attempts WHERE round = $r AND policy <> 'reference')
        SELECT attempt_id FROM mine JOIN executions USING (attempt_id)
        WHERE attempt_id NOT IN (SELECT attempt_id FROM verdicts WHERE suite = $s)
        ORDER BY attempt_id
        """, {"r": r, "s": suite.name}).to_pylist()  # type: ignore[arg-type]
    done = int(store.scalar("SELECT count(DISTINCT attempt_id) FROM verdicts WHERE round = ? AND suite = ?",
                            [r, suite.name]) or 0)
    ctx.set_total("contracts", done + len(rows))
    ctx.advance("contracts", done)
    ids = [x["attempt_id"] for x in rows]
    step = 4 * commit_every(done + len(ids))
    for start in range(0, len(ids), step):
        chunk = ids[start:start + step]
        samples = _load_samples(store, chunk, problem_from_row, attempt_from_row, execution_from_rows, Sample)
        # Threads, not processes: contracts spend their time in solvers, which release the GIL.
        report = run_suite(suite, samples, round=r, executor=_executor(ctx), workers=ctx.workers)
        if report.repairs:
            store.write("repairs", r, [x.model_dump() for x in report.repairs])
        if report.disputes:
            store.write("disputes", r, [d.model_dump() for d in report.disputes])
        store.write("verdicts", r, [{**v.model_dump(), "round": r} for v in report.verdicts])
        ctx.advance("contracts", len(chunk))
        yield len(chunk)


def _executor(ctx: RoundContext) -> Callable[[Sequence[Any]], list[Any]]:
    from solvers.sandbox import Program, run_batch

    config = _sandbox_config(ctx.plan)

    def run(attempts: Sequence[Any]) -> list[Any]:
        return list(run_batch([Program(program_id=a.attempt_id, code=a.code) for a in attempts], config,
                              workers=ctx.workers))

    return run


def _load_samples(store: Store, ids: list[str], problem_from_row: Any, attempt_from_row: Any,
                  execution_from_rows: Any, sample_cls: Any) -> list[Any]:
    ids_sql = {"ids": ids}
    attempts = {a["attempt_id"]: a for a in store.query(
        "SELECT * FROM attempts WHERE attempt_id IN (SELECT unnest($ids))", ids_sql).to_pylist()}  # type: ignore[arg-type]
    pids = sorted({a["problem_id"] for a in attempts.values()})
    problems = {p["problem_id"]: p for p in store.query(
        "SELECT * FROM problems WHERE problem_id IN (SELECT unnest($p))", {"p": pids}).to_pylist()}  # type: ignore[arg-type]
    execs = {e["attempt_id"]: e for e in store.query(
        "SELECT * FROM executions WHERE attempt_id IN (SELECT unnest($ids))", ids_sql).to_pylist()}  # type: ignore[arg-type]
    solves: dict[str, list[dict[str, Any]]] = {}
    for s in store.query("SELECT * FROM solves WHERE attempt_id IN (SELECT unnest($ids))",
                         ids_sql).to_pylist():  # type: ignore[arg-type]
        solves.setdefault(s["attempt_id"], []).append(s)
    return [sample_cls(problem=problem_from_row(problems[attempts[i]["problem_id"]]),
                       attempt=attempt_from_row(attempts[i]),
                       execution=execution_from_rows(execs[i], solves.get(i, []))) for i in ids]


# ---- the round -----------------------------------------------------------------------------------------------

Stage = Callable[[RoundContext], Iterator[int]]
STAGES: dict[str, Stage] = {"generate": stage_generate, "policy": stage_policy, "execute": stage_execute,
                            "contracts": stage_contracts}


@dataclass
class RoundOutcome:
    round: int
    status: str  # new | resumed | complete (nothing left to do)
    summary: list[dict[str, Any]]
    notes: list[str]
    seconds: float
    rejected_by: dict[str, int] = field(default_factory=dict)  # contract -> samples it rejected in this round


def find_round(store: Store, plan: RoundPlan) -> tuple[int, str]:
    """The round this plan belongs to: an existing one with the same config hash, or the next free number."""
    rows = store.query("SELECT round, status FROM rounds WHERE config_hash = ? ORDER BY round DESC LIMIT 1",
                       [plan.config_hash]).to_pylist()
    if rows:
        return int(rows[0]["round"]), ("finished" if rows[0]["status"] == "finished" else "incomplete")
    last = store.scalar("SELECT max(round) FROM round_events")
    return (int(last) + 1 if last is not None else 1), "new"


def run_round(store: Store, plan: RoundPlan, workers: int | None = None,
              progress: Callable[[str, int], None] | None = None,
              set_total: Callable[[str, int], None] | None = None,
              stages: Iterable[str] | None = None) -> RoundOutcome:
    """Run (or resume) the round of ``plan``; holds the store's writer lock throughout."""
    start = time.monotonic()
    from solvers.sandbox import default_workers  # one definition of "the cores"

    workers = workers or default_workers()
    with store.lock():
        round_id, state = find_round(store, plan)
        ctx = RoundContext(store, plan, round_id, workers, progress or (lambda s, n: None),
                           set_total or (lambda s, n: None))
        if state == "finished" and not _has_pending(store, plan, round_id):
            return RoundOutcome(round_id, "complete", summarize(store, round_id), [], time.monotonic() - start,
                                rejections_by_contract(store, round_id))
        event = "started" if state == "new" else "resumed"
        store.write("round_events", round_id, [_event(plan, event)])
        for name in stages or STAGES:
            for _ in STAGES[name](ctx):
                pass
        store.compact(round_id)  # the small resumable commits of this round -> one part per table
        summary = summarize(store, round_id)
        store.write("round_events", round_id, [{**_event(plan, "finished"),
                                                "summary_json": json.dumps(summary, default=str)}])
    return RoundOutcome(round_id, "new" if state == "new" else "resumed", summary, ctx.notes,
                        time.monotonic() - start, rejections_by_contract(store, round_id))


def rejections_by_contract(store: Store, round_id: int) -> dict[str, int]:
    """How many of the round's samples each reject-severity contract failed (a sample may fail several)."""
    rows = store.query(
        """
        SELECT v.contract, count(DISTINCT v.attempt_id) AS n
        FROM verdicts v JOIN attempts a USING (attempt_id)
        WHERE a.round = ? AND v.severity = 'reject' AND v.outcome = 'fail'
        GROUP BY 1 ORDER BY 2 DESC, 1
        """, [round_id]).to_pylist()
    return {r["contract"]: r["n"] for r in rows}


def _has_pending(store: Store, plan: RoundPlan, round_id: int) -> bool:
    """Work a finished round may still have: attempts whose execution hit infrastructure errors, and policy
    samples whose requests failed."""
    if pending_attempts(store, round_id):
        return True
    if plan.policy is None:
        return False
    short = store.scalar(
        """SELECT count(*) FROM round_items i WHERE i.round = $r AND (SELECT count(*) FROM attempts a
           WHERE a.problem_id = i.problem_id AND a.policy = $policy) < $k""",
        {"r": round_id, "policy": plan.policy, "k": plan.samples})
    return bool(short)


def _event(plan: RoundPlan, event: str) -> dict[str, Any]:
    return {"event": event, "event_at": _now(), "config_hash": plan.config_hash,
            "config_json": canonical_json(plan.to_json()), "env_json": canonical_json(environment()),
            "command": " ".join(sys.argv)[:1000]}


def summarize(store: Store, round_id: int) -> list[dict[str, Any]]:
    """Per family: generated, verified, disputed, infeasible, reproduced, median ground-truth solve ms, and
    accepted / rejected when contracts ran."""
    rows = store.query(
        """
        SELECT i.family,
               count(*) AS generated,
               count(*) FILTER (WHERE p.gt_status IN ('optimal', 'infeasible', 'unbounded') AND NOT p.disputed)
                   AS verified,
               count(*) FILTER (WHERE p.disputed) AS disputed,
               count(*) FILTER (WHERE p.gt_status = 'infeasible') AS infeasible,
               count(s.attempt_id) FILTER (WHERE s.exec_status IS NOT NULL) AS executed,
               count(*) FILTER (WHERE s.objective_match) AS reproduced,
               median(p.gt_solve_ms) AS median_solve_ms,
               count(*) FILTER (WHERE s.accepted) AS accepted,
               count(*) FILTER (WHERE s.accepted = false) AS rejected,
               count(*) FILTER (WHERE s.n_verdicts IS NOT NULL) AS checked
        FROM round_items i JOIN problems p USING (problem_id)
        LEFT JOIN samples s ON s.attempt_id = i.attempt_id
        WHERE i.round = ?
        GROUP BY 1 ORDER BY 1
        """, [round_id]).to_pylist()
    policy = {r["family"]: r for r in store.query(
        """
        SELECT family, count(*) AS samples, count(*) FILTER (WHERE exec_status = 'ok') AS policy_ran_ok,
               count(*) FILTER (WHERE objective_match) AS policy_correct,
               count(*) FILTER (WHERE accepted) AS policy_accepted,
               avg(coalesce(accepted, objective_match, false)::INT) AS pass_at_1,
               count(DISTINCT problem_id) FILTER (WHERE coalesce(accepted, objective_match, false))
                   / count(DISTINCT problem_id) AS pass_at_k
        FROM samples WHERE round = ? AND policy <> 'reference' GROUP BY 1
        """, [round_id]).to_pylist()}
    for row in rows:
        if policy:
            extra = policy.get(row["family"], {})
            row.update({k: extra.get(k, 0) for k in ("samples", "policy_ran_ok", "policy_correct",
                                                     "policy_accepted", "pass_at_1", "pass_at_k")})
    return rows


def _warm_imports() -> None:
    """Import the heavy modules once in the parent, so forked workers start with them loaded."""
    import importlib

    for name in ("solvers.ground_truth", "solvers.render", "highspy", "gurobipy", "ortools.linear_solver.pywraplp"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    family_names()


class _NoPool:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _pool(workers: int, n_tasks: int) -> Any:
    """A fork-based process pool (workers inherit the imported solvers: no per-worker import cost), or none for
    one worker or a tiny batch, where pool start-up would cost more than it saves."""
    if workers <= 1 or n_tasks <= 2:
        return _NoPool()
    return ProcessPoolExecutor(max_workers=min(workers, n_tasks), mp_context=get_context("fork"),
                               initializer=_quiet_worker)


def _quiet_worker() -> None:
    """Solver libraries print banners straight to fd 1 (HiGHS does); in a pool worker that would tear the
    progress bar, and the worker's results travel by pipe, not stdout."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _now() -> Any:
    import datetime as dt

    return dt.datetime.now(dt.UTC)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    loc = f" ({os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return (text[0] if text else type(exc).__name__)[:300] + loc
