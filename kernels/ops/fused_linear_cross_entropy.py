"""Cross-entropy of ``hidden @ weight.T`` against labels, without materialising the (tokens x vocab) logits.

``reference`` is what a training loop does by default: full logits (in the autocast dtype, as the LM head
produces them), upcast to fp32, ``F.cross_entropy``. Its peak memory is several (T x V) fp32 buffers (logits, their
fp32 copy, log-softmax, the gradient).

``chunked`` is a custom autograd Function (the Liger-Kernel scheme): the forward walks the tokens in chunks, computes
each chunk's logits (GEMM in fp32; ``chunked_autocast``: in the autocast dtype, as the reference's LM head), its loss, and *at once* its gradient w.r.t. the chunk's hidden states and its
contribution to the weight gradient (softmax - onehot, scaled); the logits chunk is then freed. Backward only
scales the stored gradients by the incoming grad. Peak extra memory: one (chunk x V) block plus dH (T x D) and dW
(V x D). ``chunked_autocast`` does the chunk GEMMs in the autocast dtype (bf16) with an fp32 softmax: the tuner's choice
where bf16 GEMMs are fast (GPUs, CPUs with AMX / AVX512-BF16); ``chunked`` where they are emulated.

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


@backend(OP, "reference")
def reference(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
              reduction: str = "sum") -> torch.Tensor:
    logits = F.linear(hidden, weight)
    return F.cross_entropy(logits.float(), labels, ignore_index=ignore_index, reduction=reduction)


def _chunks(hidden: torch.Tensor, w: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor, rows: int, scale: float,
            need_grad: bool, total: torch.Tensor, d_hidden: torch.Tensor | None, d_weight: torch.Tensor | None,
            compute_dtype: torch.dtype) -> None:
    """Loss sum into ``total``; gradients (already scaled for ``reduction``) into d_hidden / d_weight."""
    T = hidden.shape[0]
    for start in range(0, T, rows):
        sl = slice(start, min(T, start + rows))
        h = hidden[sl].to(compute_dtype)
        logits = (h @ w.T).float()
        ok = valid[sl]
        safe = torch.where(ok, labels[sl], torch.zeros_like(labels[sl]))
        lse = torch.logsumexp(logits, dim=-1)
        target = logits.gather(1, safe[:, None]).squeeze(1)
        total += ((lse - target) * ok).sum()
        if need_grad:
            assert d_hidden is not None and d_weight is not None
            # d loss / d logits = softmax - onehot on valid rows, 0 on ignored rows (in place on the chunk).
            grad = logits.sub_(lse[:, None]).exp_()
            grad[torch.arange(grad.shape[0], device=grad.device), safe] -= 1.0
            grad.mul_((ok.to(grad.dtype) * scale)[:, None])
            g = grad.to(compute_dtype)
            d_hidden[sl] = (g @ w).float()
            d_weight += (g.T @ h).float()


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
