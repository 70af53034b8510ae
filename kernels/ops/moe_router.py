"""MoE routing: from router logits to (top-k weights, top-k expert indices), exactly HF's expert choice.

Two modes (a keyword, so one op covers both model families):

* ``softmax`` (Qwen3-MoE): softmax over experts in fp32, top-k, optional renormalisation of the k weights.
* ``sigmoid`` (DeepSeek-V3): sigmoid scores; choice uses scores + ``bias`` (the aux-loss-free correction), limited to
  the ``topk_group`` groups whose two best biased scores sum highest; weights are the *unbiased* scores of the chosen
  experts, optionally renormalised, times ``scaling``.

Signature: ``fn(logits_TE, top_k, mode="softmax", norm_topk_prob=True, bias=None, n_group=1, topk_group=1,
scaling=1.0) -> (weights_TK, indices_TK)``. Backends must select the same experts as ``reference``; the order of
the k slots may differ (the experts op is order-free), so the tests compare sorted indices.
"""

from __future__ import annotations

import torch

from kernels.ops._compile import compiled
from kernels.registry import backend, has_module

OP = "moe_router"


@backend(OP, "reference")
def reference(logits: torch.Tensor, top_k: int, mode: str = "softmax", norm_topk_prob: bool = True,
              bias: torch.Tensor | None = None, n_group: int = 1, topk_group: int = 1,
              scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    if mode == "softmax":
        probs = torch.softmax(logits, dtype=torch.float, dim=-1)
        weights, indices = torch.topk(probs, top_k, dim=-1)
        if norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(logits.dtype), indices
    n_experts = logits.shape[-1]
    scores = logits.sigmoid()
    choice = scores + bias if bias is not None else scores
    group_scores = choice.view(-1, n_group, n_experts // n_group).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(-1, n_group, n_experts // n_group).reshape(-1, n_experts)
    choice = choice.masked_fill(~score_mask.bool(), float("-inf"))
    indices = torch.topk(choice, k=top_k, dim=-1, sorted=False)[1]
    weights = scores.gather(1, indices)
    if norm_topk_prob:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    return weights * scaling, indices


@backend(OP, "fused")
def fused(logits: torch.Tensor, top_k: int, mode: str = "softmax", norm_topk_prob: bool = True,
          bias: torch.Tensor | None = None, n_group: int = 1, topk_group: int = 1,
          scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Sigmoid routing with one group (or all groups kept) skips the group mask, which then selects every expert:
    the same top-k on the same biased scores, so exactly the reference's experts. Softmax routing is already a
    softmax and a top-k; it delegates (a top-k on logits instead of probabilities could break fp32 near-ties
    differently from the reference)."""
    if mode == "softmax":
        return reference(logits, top_k, mode, norm_topk_prob, bias, n_group, topk_group, scaling)
    if n_group == 1 or topk_group == n_group:
        scores = logits.sigmoid()
        choice = scores + bias if bias is not None else scores
        indices = torch.topk(choice, k=top_k, dim=-1, sorted=False)[1]
        weights = scores.gather(1, indices)
        if norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return weights * scaling, indices
    return reference(logits, top_k, mode, norm_topk_prob, bias, n_group, topk_group, scaling)


@backend(OP, "compiled")
def compiled_(logits: torch.Tensor, top_k: int, mode: str = "softmax", norm_topk_prob: bool = True,
              bias: torch.Tensor | None = None, n_group: int = 1, topk_group: int = 1,
              scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    return compiled(reference)(logits, top_k, mode, norm_topk_prob, bias, n_group, topk_group, scaling)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="torch_npu.npu_moe_gating_top_k; NOT executed here (no Ascend device)")
def npu(logits: torch.Tensor, top_k: int, mode: str = "softmax", norm_topk_prob: bool = True,
        bias: torch.Tensor | None = None, n_group: int = 1, topk_group: int = 1,
        scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    import torch_npu

    # group_select_mode=1: group score = sum of the top-2 experts (DeepSeek-V3); norm_type 0 softmax, 1 sigmoid.
    weights, indices, _ = torch_npu.npu_moe_gating_top_k(
        logits.float(), k=top_k, bias=bias, k_group=topk_group, group_count=n_group, group_select_mode=1,
        renorm=0, norm_type=0 if mode == "softmax" else 1, out_flag=False,
        routed_scaling_factor=scaling if mode == "sigmoid" else 1.0, eps=1e-20)
    if mode == "softmax" and norm_topk_prob:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(logits.dtype) if mode == "softmax" else weights, indices.long()
