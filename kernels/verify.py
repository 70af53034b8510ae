"""Numerics check of a backend against ``reference``: forward outputs and input gradients, on several input sets.

Tolerances (relative to the reference's largest magnitude, so one rule covers large-magnitude inputs):
* fp32: 1e-4. Backends reorder float sums (chunked reductions, segment-wise GEMMs): fp32 has a 2^-24 ~ 6e-8 unit
  roundoff; sums of up to ~10^4 terms stay well inside 1e-4 of the largest value.
* bf16 (autocast): 6e-2. bf16 keeps 8 mantissa bits (2^-8 ~ 3.9e-3 per rounding); a backend that computes in fp32
  where the reference rounds to bf16 after each GEMM and activation differs by a few such roundings, and the
  gradients (two more GEMMs deep) by a few more; 6e-2 is ~15 bf16 ulps of the largest value and still catches a
  wrong formula (those are off by O(1)).
Under bf16 the reference is itself an approximation of the fp32 function, so a backend is compared with both the
bf16 reference and the reference run in fp32 (no autocast), and the smaller error counts: a backend that keeps fp32
where the reference rounds is then not penalised for being more accurate, and a wrong formula still fails both.
Routing ops must pick exactly the reference's experts (the set per token; the slot order is free).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from kernels import registry

LARGE = {"swiglu": 30.0, "fused_linear_cross_entropy": 30.0, "attention": 8.0}
TOLERANCE = {"float32": 1e-4, "bfloat16": 6e-2}


@dataclass
class Check:
    ok: bool
    max_error: float
    detail: str = ""


def _autocast(dtype: str, device: str):  # noqa: ANN202
    if dtype == "bfloat16":
        return torch.autocast(device, dtype=torch.bfloat16)
    return nullcontext()


def clone_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                 for a in args)


def upcast_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """fp32 copies of the floating tensors (integer and boolean ones as they are): the oracle's inputs. Inputs
    captured under autocast can mix dtypes (on CUDA q / k come out of RoPE in fp32 beside a bf16 v), which the
    eager reference only multiplies together under autocast."""
    return tuple(a.detach().float().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)


def run(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, device: str,
        upstream_seed: int = 0) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    """Outputs (as a list) and the gradients of every grad-requiring tensor input under a fixed random upstream."""
    with _autocast(dtype, device):
        out = fn(*args, **kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    grads: list[torch.Tensor | None] = []
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    if diff and leaves:
        g = torch.Generator().manual_seed(upstream_seed)
        ups = [torch.randn(o.shape, generator=g).to(o.device, o.dtype) for o in diff]
        grads = list(torch.autograd.grad(diff, leaves, ups, allow_unused=True))
    return [o.detach() for o in outs], [None if x is None else x.detach() for x in grads]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    if a.shape != b.shape:
        return float("inf")
    if not torch.isfinite(a).all() or not torch.isfinite(b).all():
        return 0.0 if torch.equal(torch.isfinite(a), torch.isfinite(b)) and torch.allclose(
            a[torch.isfinite(a)], b[torch.isfinite(b)], rtol=1e-3, atol=1e-3) else float("inf")
    scale = float(b.abs().max()) if b.numel() else 0.0
    return float((a - b).abs().max()) / max(scale, 1e-6) if a.numel() else 0.0


def _error(out: list[torch.Tensor], grads: list[torch.Tensor | None], ref_out: list[torch.Tensor],
           ref_grads: list[torch.Tensor | None]) -> float:
    err = max(_rel(a, b) for a, b in zip(out, ref_out, strict=True))
    for a, b in zip(grads, ref_grads, strict=True):
        if (a is None) != (b is None):
            return float("inf")
        if a is not None and b is not None:
            err = max(err, _rel(a, b))
    return err


def compare(op: str, backend: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str,
            device: str = "cpu") -> Check:
    ref_fn, cand_fn = registry.get(op).fn, registry.get(op, backend).fn
    ref_out, ref_grads = run(ref_fn, clone_args(args), kwargs, dtype, device)
    try:
        out, grads = run(cand_fn, clone_args(args), kwargs, dtype, device)
    except Exception as e:  # noqa: BLE001 - any failure of a candidate is a rejection, recorded with its reason
        return Check(False, float("inf"), f"{type(e).__name__}: {e}")
    if op == "moe_router":
        (w_ref, i_ref), (w, i) = ref_out, out
        i_ref_s, o_ref = i_ref.sort(-1)
        i_s, o = i.sort(-1)
        if not torch.equal(i_ref_s, i_s):
            n = int((i_ref_s != i_s).any(-1).sum())
            return Check(False, float("inf"), f"{n} tokens routed to different experts")
        err = _rel(w.gather(-1, o), w_ref.gather(-1, o_ref))
        if torch.equal(i, i_ref):  # same slot order: the random upstream gradient lines up, compare d logits
            for a, b in zip(grads, ref_grads, strict=True):
                if a is not None and b is not None:
                    err = max(err, _rel(a, b))
    else:
        if len(out) != len(ref_out):
            return Check(False, float("inf"), "different number of outputs")
        err = _error(out, grads, ref_out, ref_grads)
        if dtype == "bfloat16" and err > TOLERANCE[dtype]:
            oracle_out, oracle_grads = run(ref_fn, upcast_args(args), kwargs, "float32", device)
            err = min(err, _error(out, grads, oracle_out, oracle_grads))
    tol = TOLERANCE[dtype]
    return Check(err <= tol, err, "" if err <= tol else f"relative error {err:.2e} > {tol:.0e}")


def variants(op: str, args: tuple[Any, ...], seed: int = 0) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """The captured inputs, a random redraw, and adversarial sets: large magnitudes, zeros, router ties."""
    g = torch.Generator().manual_seed(seed)

    def redraw(a: Any, scale: float) -> Any:
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.requires_grad:
            std = float(a.detach().float().std()) if a.numel() > 1 else 1.0
            new = torch.randn(a.shape, generator=g) * (std or 1.0) * scale
            return new.to(a.device, a.dtype).requires_grad_(True)
        return a
    yield "captured", args
    yield "random", tuple(redraw(a, 1.0) for a in args)
    first = args[0]
    if isinstance(first, torch.Tensor) and first.is_floating_point():
        # Scale-invariant ops (norm, rotation, routing) get 1e3; where magnitude moves the answer sharply (logits
        # through exp), a factor that saturates softmax / silu without making bf16 argmax a coin toss.
        big = first.detach() * LARGE.get(op, 1e3)
        yield "large", (big.requires_grad_(first.requires_grad), *args[1:])
        yield "zeros", (torch.zeros_like(first).requires_grad_(first.requires_grad), *args[1:])
    if op == "moe_router":
        ties = (first.detach() * 2).round() / 2  # many equal logits: tie-breaking must match the reference
        yield "ties", (ties, *args[1:])
        yield "all_equal", (torch.zeros_like(first), *args[1:])
