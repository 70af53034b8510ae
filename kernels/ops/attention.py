"""Attention in HF's attention-interface layout: q (B, H, S, D), k / v (B, Hkv, S, D) -> out (B, S, H, D).

``mask`` is None (plain causal) or an additive float / boolean (B, 1, S, S) mask as transformers builds it (packed
rows get a block-causal mask). Grouped-query attention repeats k / v heads.

* ``reference``: the eager formula (scores, mask, fp32 softmax, weighted sum), HF's ``eager_attention_forward``.
* ``sdpa``: ``F.scaled_dot_product_attention`` (flash / memory-efficient kernels where the device has them).
* ``sdpa_fp32``: SDPA computed in fp32 (q / k / v upcast inside, the output cast back): on a CPU without bf16 matrix
  units the bf16 flash-attention kernel emulates its bf16 GEMMs; chosen only if the tuner measures it faster.
* ``npu``: ``torch_npu.npu_fusion_attention`` (BNSD layout); NOT executed here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.registry import backend, has_module

OP = "attention"


def _repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


def _bool_mask(mask: torch.Tensor | None, S: int, L: int, device: torch.device) -> torch.Tensor:
    """True = may attend. None means causal (queries are the last S of L keys)."""
    if mask is None:
        return torch.ones(S, L, dtype=torch.bool, device=device).tril(L - S)
    return mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2


@backend(OP, "reference")
def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
              scaling: float) -> torch.Tensor:
    n_rep = q.shape[1] // k.shape[1]
    k, v = _repeat_kv(k, n_rep), _repeat_kv(v, n_rep)
    scores = torch.matmul(q, k.transpose(2, 3)) * scaling
    allowed = _bool_mask(mask, q.shape[2], k.shape[2], q.device)
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(probs, v).transpose(1, 2).contiguous()


@backend(OP, "sdpa")
def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
         scaling: float) -> torch.Tensor:
    n_rep = q.shape[1] // k.shape[1]
    k, v = _repeat_kv(k, n_rep), _repeat_kv(v, n_rep)
    if mask is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1, scale=scaling)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=_bool_mask(mask, q.shape[2], k.shape[2], q.device),
                                             scale=scaling)
    return out.transpose(1, 2).contiguous()


@backend(OP, "sdpa_fp32", gemm="float32", note="SDPA in fp32 (for devices without bf16 matrix units)")
def sdpa_fp32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
              scaling: float) -> torch.Tensor:
    dev = q.device.type
    dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else q.dtype
    with torch.autocast(dev, enabled=False):
        out = sdpa(q.float(), k.float(), v.float(), mask, scaling)
    return out.to(dtype)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="torch_npu.npu_fusion_attention (BNSD); NOT executed here (no Ascend device)")
def npu(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
        scaling: float) -> torch.Tensor:
    import torch_npu

    allowed = _bool_mask(mask, q.shape[2], k.shape[2], q.device)
    # npu_fusion_attention's atten_mask marks the positions to DROP (True = masked out); sparse_mode 0 = full mask.
    out = torch_npu.npu_fusion_attention(q, k, v, q.shape[1], input_layout="BNSD", scale=scaling,
                                         atten_mask=~allowed, sparse_mode=0)[0]
    return out.transpose(1, 2).contiguous()
