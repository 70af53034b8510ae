"""RMSNorm as in HF Qwen3 / Llama / DeepSeek-V3: ``weight * (x / rms(x)).to(x.dtype)``, statistics in fp32.

The output dtype is ``promote(weight.dtype, x.dtype)`` exactly as HF's module (an fp32 weight times a bf16
normalised input gives fp32 under autocast); every backend keeps that.
"""

from __future__ import annotations

import torch

from kernels.ops._compile import compiled
from kernels.registry import backend, cuda_triton, has_module

OP = "rms_norm"


@backend(OP, "reference")
def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    dtype = x.dtype
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


class _FusedRMSNorm(torch.autograd.Function):
    """Hand-written backward: saves x and 1/rms only (eager autograd saves every intermediate)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # noqa: ANN001
        h = x.to(torch.float32)
        rstd = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        normed = (h * rstd).to(x.dtype)
        ctx.save_for_backward(x, weight, rstd)
        return weight * normed

    @staticmethod
    def backward(ctx, dy: torch.Tensor):  # noqa: ANN001, ANN205
        x, weight, rstd = ctx.saved_tensors
        xhat = x.to(torch.float32) * rstd
        dy32 = dy.to(torch.float32)
        dw = (dy32 * xhat.to(x.dtype).to(torch.float32)).reshape(-1, x.shape[-1]).sum(0).to(weight.dtype)
        g = dy32 * weight.to(torch.float32)
        # d/dx of x * rstd(x): rstd * (g - xhat * mean(g * xhat))
        dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        return dx.to(x.dtype), dw, None


@backend(OP, "fused")
def fused(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return _FusedRMSNorm.apply(x, weight, eps)


@backend(OP, "compiled")
def compiled_(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return compiled(reference)(x, weight, eps)


@backend(OP, "triton", devices=("cuda",), available=cuda_triton,
         note="CUDA; tested on CPU under TRITON_INTERPRET=1 in fp32")
def triton_(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    from kernels.triton_kernels.rms_norm import rms_norm

    return rms_norm(x, weight, eps)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="torch_npu.npu_rms_norm; NOT executed here (no Ascend device)")
def npu(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    import torch_npu

    # npu_rms_norm returns (y, rstd); y is in x's dtype, so the HF dtype promotion is applied after.
    y = torch_npu.npu_rms_norm(x, weight.to(x.dtype), epsilon=eps)[0]
    return y.to(torch.promote_types(x.dtype, weight.dtype))
