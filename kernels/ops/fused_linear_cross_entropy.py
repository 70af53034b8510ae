"""Cross-entropy of ``hidden @ weight.T`` against labels, without materialising the (tokens x vocab) logits.

``reference`` is what a training loop does by default: full logits (in the autocast dtype, as the LM head
produces them), upcast to fp32, ``F.cross_entropy``. Its peak memory is several (T x V) fp32 buffers (logits, their
fp32 copy, log-softmax, the gradient).

``chunked`` is a custom autograd Function (the Liger-Kernel scheme): the forward computes the target rows only (an
ignored label adds no loss and no gradient; in SFT most of a packed row is prompt), walks them in chunks, computes
each chunk's logits (GEMM in fp32; ``chunked_autocast``: in the autocast dtype, as the reference's LM head), its loss
and *at once* d loss / d logits (softmax - onehot, scaled), written in the compute dtype into a gradient block; each
block then costs one GEMM for the hidden states' gradient and one for the weight's. The fp32 logits of a chunk are
freed as soon as they are used. Backward only scales the stored gradients by the incoming grad. Peak extra memory:
one (chunk x V) fp32 block, one gradient block (``GRAD_ELEMENTS``), dH (T x D) and dW (V x D).
``chunked_autocast`` does the GEMMs in the autocast dtype (bf16) with an fp32 softmax: the tuner's choice where bf16
GEMMs are fast (GPUs, CPUs with AMX / AVX512-BF16); ``chunked`` where they are emulated. Measured on SmolLM2's head
(49,152 x 576, 2,046 tokens, 62% targets, bf16 autocast, 2 threads, AMX Xeon): forward + backward 535 ms against
the reference's 844 ms (``bench/flce.py``).

Signature: ``fn(hidden_TD, weight_VD, labels_T, ignore_index=-100, reduction="sum") -> loss`` (mean divides by the
number of non-ignored labels).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.ops._compile import compiled
from kernels.registry import backend, has_module

OP = "fused_linear_cross_entropy"
CHUNK_ELEMENTS = 2**22  # logits elements per chunk (16 MiB in fp32): chunk rows = CHUNK_ELEMENTS // vocab
GRAD_ELEMENTS = 2**26  # d logits elements per gradient block (128 MiB in bf16): one d_hidden / d_weight GEMM each


@backend(OP, "reference")
def reference(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
              reduction: str = "sum") -> torch.Tensor:
    logits = F.linear(hidden, weight)
    return F.cross_entropy(logits.float(), labels, ignore_index=ignore_index, reduction=reduction)


def _chunks(hidden: torch.Tensor, w: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor, rows: int, scale: float,
            need_grad: bool, total: torch.Tensor, d_hidden: torch.Tensor | None, d_weight: torch.Tensor | None,
            compute_dtype: torch.dtype) -> None:
    """Loss sum into ``total``; gradients (already scaled for ``reduction``) into d_hidden / d_weight.

    Only the target rows are computed (an ignored row adds nothing to the loss and its gradient is zero: in SFT most
    of a packed row is prompt). Each chunk's d loss / d logits (softmax - onehot) is written in the compute dtype into
    a gradient block of up to ``GRAD_ELEMENTS`` elements; each block then costs one GEMM for d_hidden and one for
    d_weight. Accumulating d_weight (V x D, fp32) per small chunk instead re-read and re-wrote it once per chunk: on
    SmolLM2's 49,152 x 576 head that was 24 x 226 MB of memory traffic per step, twice the reference's time."""
    idx = valid.nonzero().squeeze(1)
    if idx.numel() == 0:
        return
    if idx.numel() == hidden.shape[0]:  # every row a target (the patched forward already dropped the rest): no gather
        hv, lv = hidden.to(compute_dtype), labels
    else:
        hv, lv = hidden.index_select(0, idx).to(compute_dtype), labels.index_select(0, idx)
    V = w.shape[0]
    block = max(rows, GRAD_ELEMENTS // V)
    for b0 in range(0, hv.shape[0], block):
        hb, lb = hv[b0:b0 + block], lv[b0:b0 + block]
        grads = torch.empty((hb.shape[0], V), dtype=compute_dtype, device=hb.device) if need_grad else None
        for c0 in range(0, hb.shape[0], rows):
            sl = slice(c0, min(hb.shape[0], c0 + rows))
            logits = (hb[sl] @ w.T).float()
            lse = torch.logsumexp(logits, dim=-1)
            total += (lse - logits.gather(1, lb[sl, None]).squeeze(1)).sum()
            if need_grad:
                assert grads is not None
                grad = logits.sub_(lse[:, None]).exp_()  # softmax - onehot, in place on the chunk
                grad[torch.arange(grad.shape[0], device=grad.device), lb[sl]] -= 1.0
                if scale != 1.0:
                    grad.mul_(scale)
                grads[sl] = grad
        if need_grad:
            assert grads is not None and d_hidden is not None and d_weight is not None
            d_hidden.index_copy_(0, idx[b0:b0 + block], (grads @ w).float())
            d_weight += (grads.T @ hb).float()


class _ChunkedLinearCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int,  # noqa: ANN001
                reduction: str, compute_dtype: torch.dtype) -> torch.Tensor:
        T, _ = hidden.shape
        V = weight.shape[0]
        rows = max(1, CHUNK_ELEMENTS // V)
        valid = labels != ignore_index
        n_valid = int(valid.sum())
        scale = 1.0 / max(1, n_valid) if reduction == "mean" else 1.0
        need_grad = hidden.requires_grad or weight.requires_grad
        w = weight.to(compute_dtype)
        d_hidden = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device) if need_grad else None
        d_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_grad else None
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        with torch.autocast(hidden.device.type, enabled=False):  # the compute dtype is ours, not autocast's
            _chunks(hidden, w, labels, valid, rows, scale, need_grad, total, d_hidden, d_weight, compute_dtype)
        ctx.save_for_backward(d_hidden if need_grad else torch.empty(0),
                              d_weight if need_grad else torch.empty(0))
        ctx.dtypes = (hidden.dtype, weight.dtype)
        return total * scale

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # noqa: ANN001, ANN205
        d_hidden, d_weight = ctx.saved_tensors
        g = grad_out.to(torch.float32)
        dh = (d_hidden * g).to(ctx.dtypes[0]) if ctx.needs_input_grad[0] else None
        dw = (d_weight * g).to(ctx.dtypes[1]) if ctx.needs_input_grad[1] else None
        return dh, dw, None, None, None, None


@backend(OP, "chunked", gemm="float32")
def chunked(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
            reduction: str = "sum") -> torch.Tensor:
    return _ChunkedLinearCE.apply(hidden, weight, labels, ignore_index, reduction, torch.float32)


@backend(OP, "chunked_autocast")
def chunked_autocast(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
                     reduction: str = "sum") -> torch.Tensor:
    dev = hidden.device.type
    dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else hidden.dtype
    return _ChunkedLinearCE.apply(hidden, weight, labels, ignore_index, reduction, dtype)


def _ce_formula(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int,
                reduction: str) -> torch.Tensor:
    logits = (hidden.float() @ weight.float().T)
    return F.cross_entropy(logits, labels, ignore_index=ignore_index, reduction=reduction)


@backend(OP, "compiled", gemm="float32", note="torch.compile of fp32 linear + CE (Inductor may fuse the softmax; logits still exist)")
def compiled_(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
              reduction: str = "sum") -> torch.Tensor:
    return compiled(_ce_formula)(hidden, weight, labels, ignore_index, reduction)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="chunked scheme with the chunk GEMMs on the NPU in bf16; NOT executed here (no Ascend device)")
def npu(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
        reduction: str = "sum") -> torch.Tensor:
    # torch_npu has no single fused linear+CE operator; the chunked Function is device-agnostic torch code.
    return _ChunkedLinearCE.apply(hidden, weight, labels, ignore_index, reduction, torch.bfloat16)
