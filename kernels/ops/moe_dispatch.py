"""Routed experts (SwiGLU): dispatch tokens to experts, run each expert's MLP, combine with the routing weights.

Signature: ``fn(x_TD, indices_TK, weights_TK, gate_up_E2FD, down_EDF) -> y_TD`` with HF's expert weight layout
(``gate_up_proj`` is (E, 2F, D), gate rows first; ``down_proj`` is (E, D, F)), matching HF's ``*Experts.forward``.

* ``reference``: HF's eager loop (one-hot mask, ``torch.where`` per expert, ``index_add_``).
* ``sorted``: sort-based dispatch. ``permute`` sorts the T*K (token, slot) pairs by expert once, so every expert's
  rows are one contiguous segment; the expert loop slices segments (views) instead of searching a mask; ``unpermute``
  scatters the rows back to (T, K, D) and sums the K slots with their weights. One host sync (the segment sizes).
* ``sorted_fp32``: ``sorted`` with fp32 GEMMs under bf16 autocast (for CPUs that emulate bf16 GEMMs).
* ``grouped_mm``: the same permutation, then both expert GEMMs as one ``torch._grouped_mm`` each over the segment
  offsets (CPU kernel exists for bf16 in torch 2.13; fp32 raises, which the tuner records as a failed candidate).
* ``npu``: torch_npu's permute / grouped matmul / unpermute; NOT executed here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.registry import backend, has_module

OP = "moe_dispatch"


@backend(OP, "reference")
def reference(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
              down: torch.Tensor) -> torch.Tensor:
    n_experts = gate_up.shape[0]
    out = torch.zeros_like(x)
    with torch.no_grad():
        mask = F.one_hot(indices, num_classes=n_experts + 1).permute(2, 1, 0)
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
    for e in hit:
        e = e[0]
        if e == n_experts:
            continue
        slot, token = torch.where(mask[e])
        g, u = F.linear(x[token], gate_up[e]).chunk(2, dim=-1)
        h = F.linear(F.silu(g) * u, down[e]) * weights[token, slot, None]
        out.index_add_(0, token, h.to(out.dtype))
    return out


def permute(x: torch.Tensor, indices: torch.Tensor, n_experts: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rows sorted by expert (T*K, D), order: sorted position -> flat (token, slot), counts per expert (E,))."""
    k = indices.shape[1]
    flat = indices.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=n_experts)
    return x[order // k], order, counts


def unpermute(rows: torch.Tensor, order: torch.Tensor, weights: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """Inverse of ``permute``: rows back to their (token, slot), weighted sum over the K slots -> (T, D)."""
    T, K = weights.shape
    slots = torch.empty_like(rows).index_copy_(0, order, rows) if not rows.requires_grad else \
        torch.zeros_like(rows).index_copy(0, order, rows)
    slots = slots.view(T, K, -1)
    return (slots * weights.unsqueeze(-1).to(slots.dtype)).sum(1).to(out_dtype)


@backend(OP, "sorted")
def sorted_(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
            down: torch.Tensor) -> torch.Tensor:
    n_experts = gate_up.shape[0]
    rows, order, counts = permute(x, indices, n_experts)
    outs = []
    start = 0
    for e, n in enumerate(counts.tolist()):
        if n == 0:
            continue
        seg = rows[start:start + n]
        g, u = F.linear(seg, gate_up[e]).chunk(2, dim=-1)
        outs.append(F.linear(F.silu(g) * u, down[e]))
        start += n
    h = torch.cat(outs) if outs else rows.new_zeros((0, x.shape[1]))
    return unpermute(h, order, weights, x.dtype)


@backend(OP, "sorted_fp32", gemm="float32", note="sorted dispatch with fp32 GEMMs even under bf16 autocast: faster on CPUs "
         "without native bf16 GEMM (no AVX512-BF16 / AMX), and at least as accurate as the bf16 reference")
def sorted_fp32(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
                down: torch.Tensor) -> torch.Tensor:
    with torch.autocast(x.device.type, enabled=False):
        return sorted_(x.float(), indices, weights.float(), gate_up.float(), down.float()).to(x.dtype)


def _grouped_dtype(x: torch.Tensor) -> torch.dtype:
    if torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    return x.dtype


@backend(OP, "grouped_mm", available=lambda: hasattr(torch, "_grouped_mm"))
def grouped_mm(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
               down: torch.Tensor) -> torch.Tensor:
    dtype = _grouped_dtype(x)
    if x.device.type == "cpu" and dtype != torch.bfloat16:
        raise NotImplementedError("torch._grouped_mm on CPU supports bf16 only (torch 2.13)")
    n_experts = gate_up.shape[0]
    rows, order, counts = permute(x, indices, n_experts)
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    with torch.autocast(x.device.type, enabled=False):
        # (E, 2F, D) -> (E, D, 2F) view: grouped_mm takes the right operand as (E, K, N).
        h = torch._grouped_mm(rows.to(dtype), gate_up.to(dtype).transpose(-2, -1), offs=offs)
        g, u = h.chunk(2, dim=-1)
        h = torch._grouped_mm((F.silu(g) * u).contiguous(), down.to(dtype).transpose(-2, -1), offs=offs)
    return unpermute(h, order, weights, x.dtype)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="npu_moe_token_permute / npu_grouped_matmul / npu_moe_token_unpermute; NOT executed here")
def npu(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
        down: torch.Tensor) -> torch.Tensor:
    import torch_npu

    rows, sorted_idx = torch_npu.npu_moe_token_permute(x, indices.to(torch.int32))
    counts = torch.bincount(indices.reshape(-1), minlength=gate_up.shape[0])
    group_list = torch.cumsum(counts, 0)
    # npu_grouped_matmul: split_item=2 / group_type=0 groups the M axis by group_list (cumulative sizes); its
    # autograd backward is provided by torch_npu for this configuration.
    h = torch_npu.npu_grouped_matmul([rows], [gate_up.transpose(-2, -1)], group_list=group_list,
                                     split_item=2, group_type=0)[0]
    g, u = h.chunk(2, dim=-1)
    h = torch_npu.npu_grouped_matmul([F.silu(g) * u], [down.transpose(-2, -1)], group_list=group_list,
                                     split_item=2, group_type=0)[0]
    return torch_npu.npu_moe_token_unpermute(h, sorted_idx, probs=weights.to(h.dtype)).to(x.dtype)
