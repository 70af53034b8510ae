"""The CPU's matmul peak, the denominator of MFU on CPU (``training.flops`` and ``flywheel kernels peak`` use it).

A peak is only a fair denominator when it is measured in the dtype the GEMMs run in **and** on the shapes they run
at: where bf16 is emulated (no AVX512-BF16 / AMX) its rate depends strongly on the shape (measured here, one thread:
2.5 GFLOP/s at 64^3, 0.5 at 512^3), so a square-only "peak" sat below what a small model's skinny bf16 GEMMs reach
and MFU read 158-167%. ``measure_cpu_peak(dtype, shapes=...)`` therefore takes the best rate over the square sweep
*and* the model's own GEMM shapes (``gemm_shapes``): no GEMM of that model can run faster than the peak, so
FLOPs / step time / peak stays <= 1 up to timing noise.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch
from torch import nn

PEAK_SIZES = (64, 128, 256, 512)
PEAK_BUDGET_S = 0.25

_cache: dict[tuple[str, tuple[tuple[int, int, int], ...]], float] = {}


def _best_rate(m: int, k: int, n: int, dtype: torch.dtype, repeats: int, g: torch.Generator) -> float:
    a = torch.randn(m, k, generator=g).to(dtype)
    b = torch.randn(k, n, generator=g).to(dtype)
    torch.mm(a, b)
    best, count, start = float("inf"), 0, time.perf_counter()
    # At least ``repeats`` runs and at least PEAK_BUDGET_S per shape: small matmuls take microseconds, and on a
    # loaded machine only many tries find the quiet moment that the best-of needs.
    while count < repeats or time.perf_counter() - start < PEAK_BUDGET_S:
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
        count += 1
    return 2.0 * m * k * n / best


def measure_cpu_peak(dtype: torch.dtype = torch.float32, size: int | None = None, repeats: int = 5,
                     shapes: Iterable[tuple[int, int, int]] = ()) -> float:
    """Best observed FLOPs/s of a matmul on this CPU in ``dtype``: over the square sizes ``PEAK_SIZES`` (or the one
    ``size``) and the ``(M, K, N)`` ``shapes`` given (cached per dtype and shapes for the process unless ``size``).

    The best of several repeats, not the mean: peak means what the hardware can do when nothing else runs, and on a
    shared machine the mean mostly measures the neighbours."""
    extra = tuple(sorted(set(shapes)))
    key = (str(dtype), extra)
    if size is None and key in _cache:
        return _cache[key]
    g = torch.Generator().manual_seed(0)
    sweep = [(n, n, n) for n in ((size,) if size else PEAK_SIZES)] + list(extra)
    best = max(_best_rate(m, k, n, dtype, repeats, g) for m, k, n in sweep)
    if size is None:
        _cache[key] = best
    return best


def gemm_shapes(model: nn.Module, tokens: int) -> list[tuple[int, int, int]]:
    """The forward ``(M, K, N)`` of the model's matmul weights for a batch of ``tokens`` tokens: every
    ``nn.Linear`` (including the LM head), and stacked expert weights (3-D ``(experts, out, in)`` or
    ``(experts, in, out)`` parameters) with M the tokens an expert sees on average (tokens x top_k / experts)."""
    config = getattr(model, "config", None)
    n_experts = getattr(config, "num_experts", None) or getattr(config, "n_routed_experts", None)
    top_k = getattr(config, "num_experts_per_tok", None) or 1
    shapes: set[tuple[int, int, int]] = set()
    for mod in model.modules():
        if isinstance(mod, nn.Linear):
            shapes.add((tokens, mod.in_features, mod.out_features))
            continue
        for p in mod.parameters(recurse=False):
            if p.dim() == 3:
                per_expert = max(1, tokens * top_k // (n_experts or p.shape[0]))
                shapes.add((per_expert, int(p.shape[-1]), int(p.shape[-2])))
    return sorted(shapes)


def measure(dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16),
            sizes: tuple[int, ...] = PEAK_SIZES, repeats: int = 5) -> list[dict[str, float | str | int]]:
    """Rows of (dtype, size, GFLOP/s) for ``flywheel kernels peak``: the same measurement as MFU's denominator."""
    rows: list[dict[str, float | str | int]] = []
    for dtype in dtypes:
        for size in sizes:
            value = measure_cpu_peak(dtype, size=size, repeats=repeats)  # one size: measured afresh
            rows.append({"dtype": str(dtype).removeprefix("torch."), "size": size, "gflops": value / 1e9})
    return rows
