"""The AuraKernel-style loop: profile a training step, rank ops by time, race every backend on each op's real
shapes, keep the fastest *correct* one, write the tuning table, and show the step time before and after.

1. Profile: the model is patched with ``reference`` everywhere in recording mode, so each op call runs inside a
   ``kernels::<op>`` profiler range and its first inputs per (op, shape, dtype) are kept; one training step (forward,
   loss, backward, AdamW) runs under ``torch.profiler``; ops are ranked by total CPU time.
2. For each op and shape: every backend registered for the device (plus candidate files, run in a separate process
   by ``kernels.candidate``, including those an LLM wrote for the top-ranked ops) is checked by ``kernels.verify`` on the captured, random and adversarial inputs, then
   raced (forward + backward, best of repeats). The race is round-robin: each round runs every correct backend
   once, in a rotating order, so a burst of load from other processes on a shared machine hits all candidates
   alike instead of deciding the winner. Float inputs are perturbed in place before every timed run so a backend
   that caches results cannot win. A speedup above 10x is suspicious: the candidate is verified again on fresh
   inputs and re-raced against the reference on them; it is kept only if both hold.
3. The fastest correct backend per (device, op, shape, dtype) goes in the table; then the step is timed with the
   unpatched model and with the table applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernels import registry
from kernels.patch import apply, revert
from kernels.table import Entry, TuningTable, majority_defaults
from kernels.verify import _autocast, clone_args, compare, variants

SUSPICIOUS = 10.0


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
            skip: set[str] | None = None) -> OpResult:
    res = OpResult(op, shape, dtype, profile_ms)
    fns: dict[str, Callable[..., Any]] = {"reference": registry.get(op).fn}
    errors: dict[str, float] = {"reference": 0.0}
    for b in registry.backends(op, device):
        if b.name == "reference" or b.name in (skip or ()):
            continue
        ok, err, detail = verify_all(op, b.name, args, kwargs, dtype, device)
        if not ok:
            res.candidates.append(Candidate(b.name, False, max_error=err, detail=detail))
            continue
        fns[b.name], errors[b.name] = b.fn, err
    ms = race(fns, args, kwargs, dtype, device, repeats)
    ref_ms = ms["reference"]
    res.candidates.insert(0, Candidate("reference", True, ref_ms, 0.0))
    for name in fns:
        if name == "reference":
            continue
        ok, err, detail = ms[name] < float("inf"), errors[name], ""
        if not ok:
            detail = "raised while racing"
        elif ref_ms / ms[name] > SUSPICIOUS:
            ok, err2, detail = verify_all(op, name, args, kwargs, dtype, device, seed=1)
            again = race({"reference": fns["reference"], name: fns[name]}, args, kwargs, dtype, device, repeats,
                         seed=1)
            ms[name] = max(ms[name], again[name] * ref_ms / again["reference"])  # the less flattering of the two
            detail = f"speedup > {SUSPICIOUS:.0f}x re-checked on fresh inputs" + (f": {detail}" if detail else "")
            err = max(err, err2)
        res.candidates.append(Candidate(name, ok, ms[name], err, detail))
    for make in extra or []:
        c = make(op, shape, dtype, device, args, kwargs, repeats)
        if c is not None:
            res.candidates.append(c)
    good = [c for c in res.candidates if c.ok and c.ms == c.ms]
    res.winner = min(good, key=lambda c: c.ms).backend
    return res


def file_candidates(paths: list[str]) -> list[Callable[..., Candidate]]:
    """``tune_op`` extras for candidate files: each is evaluated in a child process on the op it declares."""
    from kernels import candidate

    def make(path: str) -> Callable[..., Candidate]:
        target = candidate.op_of(path)

        def run_one(op: str, shape: str, dtype: str, device: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    repeats: int) -> Candidate | None:
            if op != target:
                return None
            r = candidate.evaluate(path, op, args, kwargs, dtype, device, repeats)
            return Candidate(candidate.backend_name(path), bool(r["ok"]), float(r["ms"]), float(r["max_error"]),
                             str(r["detail"]))
        return run_one
    return [make(p) for p in paths]


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
         llm: Any = None) -> tuple[TuningTable, list[OpResult], dict[str, float]]:
    """The whole loop; returns the table, the per-op results and {"before_s", "after_s"} step times. ``llm`` (a
    ``kernels.candidate.LLMWriter``) writes candidate files for its ``top`` most expensive profiled ops."""
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
    extra = file_candidates(candidate_files or []) + rejected_candidates(rejected)
    results = []
    for op, shape, dt in ranked:
        if ops and op not in ops:
            continue
        progress(f"tuning {op} {shape} {dt}")
        args, kwargs = captured[(op, shape, dt)]
        results.append(tune_op(op, shape, dt, device, args, kwargs, repeats, profile.get(op, 0.0), extra, skip))
    files = {f"file:{Path(p).stem}": str(Path(p).resolve()) for p in candidate_files or []}
    table = build_table(results, device, {"dtype": dtype, "batch": list(batch.shape), "profile_ms": profile,
                                          "torch": torch.__version__, "candidate_files": files,
                                          **({"llm": llm_meta} if llm_meta else {})})
    winners = {e.backend for e in table.entries}
    if any(name in winners for name in files):
        from kernels.candidate import register_files

        register_files({n: p for n, p in files.items() if n in winners})
    progress("timing the step before / after")
    before, after = step_before_after(model, batch, dtype, device, table, step_repeats)
    table.meta.update({"step_s_before": before, "step_s_after": after})
    if out is not None:
        table.save(out)
    return table, results, {"before_s": before, "after_s": after}
