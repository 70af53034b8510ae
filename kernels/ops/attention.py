"""Attention in HF's attention-interface layout: q (B, H, S, D), k / v (B, Hkv, S, D) -> out (B, S, H, D).

``mask`` is None (plain causal) or an additive float / boolean (B, 1, S, S) mask as transformers builds it (packed
rows get a block-causal mask). Grouped-query attention repeats k / v heads.

* ``reference``: the eager formula (scores, mask, fp32 softmax, weighted sum), HF's ``eager_attention_forward``.
* ``sdpa``: ``F.scaled_dot_product_attention`` (flash / memory-efficient kernels where the device has them).
* ``sdpa_fp32``: SDPA computed in fp32 (q / k / v upcast inside, the output cast back): on a CPU without bf16 matrix
  units the bf16 flash-attention kernel emulates its bf16 GEMMs; chosen only if the tuner measures it faster.
* ``segments``: packed rows attend document by document. A block-causal mask (each query sees the earlier keys of
  its own document, as packing with position ids reset at each boundary gives) is split into its documents and
  each runs as plain causal SDPA (the flash kernel, no mask tensor, l^2 instead of S^2 work per document); grouped
  heads go to SDPA as they are (``enable_gqa``). Any other mask falls back to ``sdpa`` unchanged. HF has no such
  path on CPU (its varlen attention is flash-attention-2, CUDA only), so a plain loop cannot use it.
* ``npu``: ``torch_npu.npu_fusion_attention`` (BNSD layout); NOT executed here.
"""

from __future__ import annotations

from typing import Any

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


_LAST: list[Any] = [None, None]  # (mask, its documents): one mask serves every layer of a forward pass


def documents(mask: torch.Tensor | None, S: int, L: int) -> list[list[tuple[int, int]]] | None:
    """Per row, the [start, end) documents of a block-causal (B, 1, S, S) mask; None for any other mask (or none)."""
    if mask is None or S != L or mask.dim() != 4 or mask.shape[1] != 1 or mask.shape[-2:] != (S, L):
        return None
    if _LAST[0] is mask:
        return _LAST[1]
    allowed = _bool_mask(mask, S, L, mask.device)[:, 0]
    causal = torch.ones(S, S, dtype=torch.bool, device=mask.device).tril()
    docs: list[list[tuple[int, int]]] | None = []
    for row in allowed:
        starts = torch.ones(S, dtype=torch.bool, device=mask.device)
        starts[1:] = ~row.diagonal(-1)  # a query that cannot see the key just before it starts a document
        doc = torch.cumsum(starts, 0)
        if not torch.equal(row, (doc[:, None] == doc[None, :]) & causal):
            docs = None
            break
        bounds = [*starts.nonzero().flatten().tolist(), S]
        docs.append(list(zip(bounds[:-1], bounds[1:], strict=True)))
    _LAST[:] = [mask, docs]
    return docs


@backend(OP, "segments", note="packed rows document by document: causal flash SDPA per document, no mask")
def segments(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
             scaling: float) -> torch.Tensor:
    docs = documents(mask, q.shape[2], k.shape[2])
    if docs is None:
        return sdpa(q, k, v, mask, scaling)
    gqa = q.shape[1] != k.shape[1]
    rows = []
    for b in range(q.shape[0]):
        spans = docs[b if len(docs) > 1 else 0]
        rows.append(torch.cat([F.scaled_dot_product_attention(q[b:b + 1, :, s:e], k[b:b + 1, :, s:e],
                                                              v[b:b + 1, :, s:e], is_causal=True, scale=scaling,
                                                              enable_gqa=gqa) for s, e in spans], dim=2))
    return torch.cat(rows, dim=0).transpose(1, 2).contiguous()


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
