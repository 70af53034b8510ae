"""The AuraKernel-style loop: profile a training step, rank ops by time, race every backend on each op's real
shapes, keep the fastest *correct* one, write the tuning table, and show the step time before and after.

1. Profile: the model is patched with ``reference`` everywhere in recording mode, so each op call runs inside a
   ``kernels::<op>`` profiler range and its first inputs per (op, shape, dtype) are kept; one training step (forward,
   loss, backward, AdamW) runs under ``torch.profiler``; ops are ranked by total CPU time.
2. For each op and shape: candidate files (a person's, or those an LLM wrote for the top-ranked ops) are first
   screened in the sandbox the caller injects (``runner``; ``kernels.candidate``): a crash, hang, denial or wrong
   answer there rejects them. Every registered backend and every screened file is then checked by
   ``kernels.verify`` here, on the captured, random and adversarial inputs, and raced (forward + backward, best of
   repeats). The race is round-robin: each round runs every correct backend once, in a rotating order, so a burst
   of load from other processes on a shared machine hits all candidates alike instead of deciding the winner.
   Float inputs are perturbed in place before every timed run so a backend that caches results cannot win.
3. The winner, whatever its source, is confirmed before the table records it: verified again on fresh inputs and
   re-raced beside ``reference`` (its time is the less flattering of the two races); if that fails, the next
   fastest is confirmed. The table is stamped with the machine kind (``kernels.machine.capability``); then the step
   is timed with the unpatched model and with the table applied. A table that makes the step slower (an op fast
   alone but slow in the step) has its ops sent back to ``reference`` one at a time while that helps
   (``revert_slowing_ops``; the reverted ops are listed in the table's ``reverted_for_step``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernels import registry
from kernels.candidate import Runner
from kernels.machine import capability
from kernels.patch import apply, revert
from kernels.table import Entry, TuningTable, majority_defaults
from kernels.verify import _autocast, clone_args, compare, variants
from solvers.errors import ConfigError


@dataclass
class Candidate:
    backend: str
    ok: bool
    ms: float = float("nan")
    max_error: float = float("nan")
    detail: str = ""


@dataclass
class OpResult:
    op: str
    shape: str
    dtype: str
    profile_ms: float
    candidates: list[Candidate] = field(default_factory=list)
    winner: str = "reference"


def packed_positions(batch: torch.Tensor, docs: int = 2) -> torch.Tensor:
    """Position ids of rows packed with ``docs`` documents each, reset at every boundary, as the trainer feeds them
    (so the profiled attention sees the block-diagonal mask of packed training, not plain causal)."""
    seq = batch.shape[1]
    length = max(1, -(-seq // docs))
    return (torch.arange(seq, device=batch.device) % length).expand_as(batch).contiguous()


def training_step(model: torch.nn.Module, batch: torch.Tensor, dtype: str) -> Callable[[], float]:
    """A closure running one real training step (forward with labels, backward, AdamW); returns the loss."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    positions = packed_positions(batch)

    def step() -> float:
        with _autocast(dtype, batch.device.type):
            loss = model(input_ids=batch, labels=batch, position_ids=positions, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())
    return step


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def profile_ops(model: torch.nn.Module, batch: torch.Tensor, dtype: str, device: str
                ) -> tuple[dict[str, float], dict[tuple[str, str, str], tuple[tuple[Any, ...], dict[str, Any]]]]:
    """(op -> CPU ms in one step, (op, shape, dtype) -> captured inputs) from a reference-patched, recorded step."""
    apply(model, TuningTable(), device=device, force_ops=set(registry.op_names()))
    dispatch = model._kernels_state.dispatch
    dispatch.record = True
    step = training_step(model, batch, dtype)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            step()
    finally:
        dispatch.record = False
        revert(model)
    times: dict[str, float] = {}
    for ev in prof.key_averages():
        if ev.key.startswith("kernels::"):
            times[ev.key.removeprefix("kernels::")] = ev.cpu_time_total / 1e3
    return times, dispatch.captured


def step_before_after(model: torch.nn.Module, batch: torch.Tensor, dtype: str, device: str, table: TuningTable,
                      repeats: int) -> tuple[float, float]:
    """Best step seconds unpatched and with ``table`` applied, alternating (ABBA...) after one warm-up round of each,
    so load from other processes falls on both."""
    step = training_step(model, batch, dtype)
    times: dict[bool, list[float]] = {False: [], True: []}
    for i in range(repeats + 1):
        for patched in ((False, True) if i % 2 == 0 else (True, False)):
            if patched:
                apply(model, table, device=device)
            try:
                t0 = time.perf_counter()
                step()  # returns float(loss): a host sync, so the step's device work is inside the timing
                dt = time.perf_counter() - t0
            finally:
                if patched:
                    revert(model)
            if i:
                times[patched].append(dt)
    return min(times[False]), min(times[True])


STEP_TOL = 0.03  # a table may not make the whole step slower than this (timing noise of the best-of-N step)


def step_time(model: torch.nn.Module, batch: torch.Tensor, dtype: str, device: str, table: TuningTable,
              repeats: int) -> float:
    """Best step seconds with ``table`` applied (one warm-up step first)."""
    step = training_step(model, batch, dtype)
    apply(model, table, device=device)
    try:
        times = []
        for i in range(repeats + 1):
            t0 = time.perf_counter()
            step()
            if i:
                times.append(time.perf_counter() - t0)
    finally:
        revert(model)
    return min(times)


def revert_slowing_ops(results: list[OpResult], before: float, after: float,
                       time_table: Callable[[TuningTable], float],
                       build: Callable[[list[OpResult]], TuningTable]) -> tuple[TuningTable, float, list[str]]:
    """Per-op races time each op alone on one captured input; a backend can still slow the whole step (a bf16
    grouped GEMM whose oneDNN kernels are compiled anew for every new expert-group size: 1.4x faster per call on
    fixed routing, the tiny MoE's step 2x slower once routing moves). Greedily send each tuned op back to
    ``reference`` (the most expensive first) while that makes the step faster, until the step is within
    ``STEP_TOL`` of the unpatched one. Returns the table, its step time and the reverted ops."""
    reverted: list[str] = []
    ops = list(dict.fromkeys(r.op for r in sorted(results, key=lambda r: -r.profile_ms) if r.winner != "reference"))
    best = build(results)
    for op in ops:
        if after <= before * (1 + STEP_TOL):
            break
        trial = [OpResult(r.op, r.shape, r.dtype, r.profile_ms, r.candidates,
                          "reference" if r.op == op or r.op in reverted else r.winner) for r in results]
        table = build(trial)
        t = time_table(table)
        if t < after:
            best, after = table, t
            reverted.append(op)
    for r in results:
        if r.op in reverted:
            r.winner = "reference"
    return best, after, reverted


def _perturb(args: tuple[Any, ...], g: torch.Generator) -> None:
    with torch.no_grad():
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_floating_point() and a.requires_grad:
                a.add_(torch.randn(a.shape, generator=g).to(a.device, a.dtype) * 1e-3 * (float(a.abs().mean()) + 1e-6))


def _prepare(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[torch.Tensor]]:
    args = clone_args(args)
    return args, [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


def _run_once(fn: Callable[..., Any], args: tuple[Any, ...], leaves: list[torch.Tensor], kwargs: dict[str, Any],
              dtype: str, device: str, g: torch.Generator) -> float:
    """Seconds of one forward + backward on freshly perturbed inputs."""
    _perturb(args, g)
    _sync(device)
    t0 = time.perf_counter()
    with _autocast(dtype, device):
        out = fn(*args, **kwargs)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor) and o.requires_grad]
    if outs and leaves:
        torch.autograd.grad([o.float().sum() for o in outs], leaves, allow_unused=True)
    _sync(device)
    return time.perf_counter() - t0


def race(fns: dict[str, Callable[..., Any]], args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, device: str,
         repeats: int, seed: int = 0) -> dict[str, float]:
    """Best ms of forward + backward per backend, timed round-robin (one run of each per round, rotating order).

    The minimum, not the median (as ``timeit`` advises): other processes only ever add time, so the best of a few
    runs is the cost of the backend itself, and on a shared, loaded machine the median mostly measures the
    neighbours. Each backend has its own copy of the inputs, perturbed in place before every run (defeats result
    caching); the first round is a warm-up (lazy compilation, allocator) and is not counted.
    """
    names = list(fns)
    state = {n: _prepare(args) for n in names}
    gens = {n: torch.Generator().manual_seed(seed) for n in names}
    times: dict[str, list[float]] = {n: [] for n in names}
    failed: set[str] = set()
    for i in range(repeats + 1):
        for j in range(len(names)):
            n = names[(i + j) % len(names)]
            if n in failed:
                continue
            try:
                dt = _run_once(fns[n], *state[n], kwargs, dtype, device, gens[n])
            except Exception:  # noqa: BLE001 - a backend that cannot run these inputs loses the race (inf)
                failed.add(n)
                continue
            if i:
                times[n].append(dt)
    return {n: float("inf") if n in failed else min(t) * 1e3 for n, t in times.items()}


def time_backend(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, device: str,
                 repeats: int, seed: int = 0) -> float:
    """Best ms of forward + backward of one backend (a race of one; candidate files are timed this way)."""
    return race({"fn": fn}, args, kwargs, dtype, device, repeats, seed)["fn"]


def verify_all(op: str, backend: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, device: str,
               seed: int = 0) -> tuple[bool, float, str]:
    worst = 0.0
    for name, inputs in variants(op, args, seed):
        c = compare(op, backend, inputs, kwargs, dtype, device)
        if not c.ok:
            return False, c.max_error, f"{name}: {c.detail}"
        worst = max(worst, c.max_error)
    return True, worst, ""


def tune_op(op: str, shape: str, dtype: str, device: str, args: tuple[Any, ...], kwargs: dict[str, Any],
            repeats: int, profile_ms: float, extra: list[Callable[..., Candidate]] | None = None,
            skip: set[str] | None = None, files: list[str] | None = None, runner: Runner | None = None) -> OpResult:
    """Race every backend of ``op`` on one captured shape and pick the fastest correct one.

    Registered backends and candidate ``files`` (screened through ``runner`` first, ``kernels.candidate``) are all
    verified here, in this process, on the captured, random and adversarial inputs, and raced together against
    ``reference``. The winner, whatever its source, is then confirmed before the table records it: verified again on
    fresh inputs (seed 1, never shown to a screen) and re-raced beside ``reference``; its time is the less
    flattering of the two races. A winner that fails its confirmation is rejected and the next fastest is confirmed.
    """
    from kernels import candidate as cand

    res = OpResult(op, shape, dtype, profile_ms)
    fns: dict[str, Callable[..., Any]] = {"reference": registry.get(op).fn}
    errors: dict[str, float] = {"reference": 0.0}
    notes: dict[str, str] = {}
    for b in registry.backends(op, device):
        if b.name == "reference" or b.name in (skip or ()):
            continue
        try:
            ok, err, detail = verify_all(op, b.name, args, kwargs, dtype, device)
        except Exception as exc:  # noqa: BLE001 - a check that cannot run rejects the backend, the op is still tuned
            ok, err, detail = False, float("inf"), f"raised in the check: {type(exc).__name__}: {exc}"[:300]
        if not ok:
            res.candidates.append(Candidate(b.name, False, max_error=err, detail=detail))
            continue
        fns[b.name], errors[b.name] = b.fn, err
    for path in files or []:
        if cand.op_of(path) != op:
            continue
        name = registry.file_backend_name(path)
        if runner is None:
            raise ConfigError("candidate files need a sandbox runner (flywheel.kernel_candidates.sandbox_runner)",
                              culprit=str(path))
        sc = cand.screen(path, op, args, kwargs, dtype, repeats, runner)
        if not sc.ok:
            res.candidates.append(Candidate(name, False, detail=sc.detail))
            continue
        try:
            registry.load_file(path)  # passed the screen: now it runs here, and only our measurements count
            ok, err, detail = verify_all(op, name, args, kwargs, dtype, device)
        except Exception as exc:  # noqa: BLE001 - a candidate that fails here (but not in the screen) is rejected
            ok, err, detail = False, float("inf"), f"raised in the tuner: {type(exc).__name__}: {exc}"[:300]
        if not ok:
            res.candidates.append(Candidate(name, False, max_error=err,
                                            detail=f"{sc.claim()}; wrong in the tuner's own check: {detail}"))
            continue
        fns[name], errors[name], notes[name] = registry.get(op, name).fn, err, sc.claim()
    ms = race(fns, args, kwargs, dtype, device, repeats)
    ref_ms = ms["reference"]
    res.candidates.insert(0, Candidate("reference", True, ref_ms, 0.0))
    for name in fns:
        if name != "reference":
            ok = ms[name] < float("inf")
            detail = "; ".join(x for x in (notes.get(name, ""), "" if ok else "raised while racing") if x)
            res.candidates.append(Candidate(name, ok, ms[name], errors[name], detail))
    for make in extra or []:
        c = make(op, shape, dtype, device, args, kwargs, repeats)
        if c is not None:
            res.candidates.append(c)
    while True:
        good = [c for c in res.candidates if c.ok and c.ms == c.ms]
        best = min(good, key=lambda c: c.ms)
        if best.backend == "reference" or best.backend not in fns or best.detail.endswith("confirmed"):
            break
        _confirm(op, best, fns, args, kwargs, dtype, device, repeats, ref_ms)
    res.winner = best.backend
    return res


def _confirm(op: str, c: Candidate, fns: dict[str, Callable[..., Any]], args: tuple[Any, ...],
             kwargs: dict[str, Any], dtype: str, device: str, repeats: int, ref_ms: float) -> None:
    """Re-verify the would-be winner ``c`` on fresh inputs and re-race it beside ``reference`` (updates ``c``)."""
    ok, err, detail = verify_all(op, c.backend, args, kwargs, dtype, device, seed=1)
    again = race({"reference": fns["reference"], c.backend: fns[c.backend]}, args, kwargs, dtype, device, repeats,
                 seed=1)
    prefix = f"{c.detail}; " if c.detail else ""
    if not ok or again[c.backend] == float("inf"):
        c.ok, c.max_error = False, max(c.max_error, err)
        c.detail = f"{prefix}winner rejected on fresh inputs: {detail or 'raised while racing'}"
        return
    c.ms = max(c.ms, again[c.backend] * ref_ms / again["reference"])  # the less flattering of the two races
    c.max_error = max(c.max_error, err)
    c.detail = f"{prefix}{ref_ms / c.ms:.2f}x, confirmed"


def file_candidates(paths: list[str]) -> list[str]:
    """The candidate files, checked to declare an op (``OP = "..."``) before any profiling starts."""
    from kernels import candidate

    for p in paths:
        candidate.op_of(p)
    return list(paths)


def rejected_candidates(rejected: list[Any]) -> list[Callable[..., Candidate]]:
    """``tune_op`` extras reporting LLM replies that never became a file (``kernels.candidate.Rejected``)."""
    def make(r: Any) -> Callable[..., Candidate]:
        def run_one(op: str, *_: Any) -> Candidate | None:
            return Candidate(r.name, False, detail=r.reason) if op == r.op else None
        return run_one
    return [make(r) for r in rejected]


def build_table(results: list[OpResult], device: str, meta: dict[str, Any]) -> TuningTable:
    entries = []
    for r in results:
        ref = next(c for c in r.candidates if c.backend == "reference")
        win = next(c for c in r.candidates if c.backend == r.winner)
        entries.append(Entry(device, r.op, r.shape, r.dtype, r.winner, round(ref.ms / win.ms, 3),
                             round(ref.ms, 4), round(win.ms, 4), win.max_error))
    return TuningTable(device, entries, majority_defaults(entries), meta)


def tune(model: torch.nn.Module, batch: torch.Tensor, dtype: str, device: str, repeats: int = 5,
         step_repeats: int = 3, ops: set[str] | None = None, out: Path | None = None,
         candidate_files: list[str] | None = None, skip: set[str] | None = None,
         progress: Callable[[str], None] = lambda s: None,
         llm: Any = None, runner: Runner | None = None) -> tuple[TuningTable, list[OpResult], dict[str, float]]:
    """The whole loop; returns the table, the per-op results and {"before_s", "after_s"} step times. ``llm`` (any
    callable with ``spec``, ``top`` and ``__call__(ops) -> written`` with ``files``, ``rejected`` and
    ``meta(spec)``: the CLI passes ``flywheel.kernel_candidates.LLMWriter``) writes candidate files for the ``top``
    most expensive profiled ops. ``runner`` screens candidate files (``kernels.candidate``); required with any."""
    if (candidate_files or llm is not None) and runner is None:
        raise ConfigError("candidate files need a sandbox runner (flywheel.kernel_candidates.sandbox_runner)",
                          culprit="runner")
    progress("profiling one training step")
    profile, captured = profile_ops(model, batch, dtype, device)
    ranked = sorted(captured, key=lambda k: -profile.get(k[0], 0.0))
    llm_meta: dict[str, Any] = {}
    rejected: list[Any] = []
    if llm is not None:
        top = list(dict.fromkeys(op for op, _, _ in ranked if not ops or op in ops))[:llm.top]
        progress(f"asking {llm.spec} for candidates of {', '.join(top)}")
        written = llm(top)
        candidate_files = [*(candidate_files or []), *written.files]
        rejected, llm_meta = written.rejected, written.meta(llm.spec)
    files_in = file_candidates(candidate_files or [])
    extra = rejected_candidates(rejected)
    results = []
    for op, shape, dt in ranked:
        if ops and op not in ops:
            continue
        progress(f"tuning {op} {shape} {dt}")
        args, kwargs = captured[(op, shape, dt)]
        results.append(tune_op(op, shape, dt, device, args, kwargs, repeats, profile.get(op, 0.0), extra, skip,
                               files_in, runner))
    winners = {r.winner for r in results}
    # Only the winning files: a table's files are imported by every process that applies it.
    files = {registry.file_backend_name(p): str(Path(p).resolve()) for p in candidate_files or []
             if registry.file_backend_name(p) in winners}
    table = build_table(results, device, {"dtype": dtype, "batch": list(batch.shape), "profile_ms": profile,
                                          "torch": torch.__version__, "candidate_files": files,
                                          "machine": capability(device),
                                          **({"llm": llm_meta} if llm_meta else {})})
    progress("timing the step before / after")
    before, after = step_before_after(model, batch, dtype, device, table, step_repeats)
    table.meta.update({"step_s_before": before, "step_s_after": after})
    if after > before * (1 + STEP_TOL):  # confirm with more steps first: one noisy step must not revert kernels
        before, after = step_before_after(model, batch, dtype, device, table, max(3, step_repeats))
        table.meta.update({"step_s_before": before, "step_s_after": after})
    if after > before * (1 + STEP_TOL):
        progress("the table slows the step: reverting ops one at a time")
        table, after, reverted = revert_slowing_ops(
            results, before, after, lambda t: step_time(model, batch, dtype, device, t, step_repeats),
            lambda rs: build_table(rs, device, table.meta))
        table.meta.update({"step_s_after": after, "reverted_for_step": reverted})
    if out is not None:
        table.save(out)
    return table, results, {"before_s": before, "after_s": after}
