"""Rotary position embedding, rotate-half layout (HF ``apply_rotary_pos_emb``): returns rotated (q, k).

q, k: (B, H, S, D); cos, sin: (B, S, D), unsqueezed on ``unsqueeze_dim`` exactly as HF does.
"""

from __future__ import annotations

import torch

from kernels.ops._compile import compiled
from kernels.registry import backend, cuda_triton, has_module

OP = "rope"


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


@backend(OP, "reference")
def reference(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
              unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (_rotate_half(q) * sin), (k * cos) + (_rotate_half(k) * sin)


class _FusedRope(torch.autograd.Function):
    """Rotation is linear and orthogonal: the backward is the rotation by -angle, so only cos/sin are saved."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,  # noqa: ANN001
                unsqueeze_dim: int):
        cos = cos.unsqueeze(unsqueeze_dim)
        sin = sin.unsqueeze(unsqueeze_dim)
        ctx.save_for_backward(cos, sin)
        ctx.dtypes = (q.dtype, k.dtype)
        return (q * cos) + (_rotate_half(q) * sin), (k * cos) + (_rotate_half(k) * sin)

    @staticmethod
    def backward(ctx, dq: torch.Tensor, dk: torch.Tensor):  # noqa: ANN001, ANN205
        cos, sin = ctx.saved_tensors

        def back(d: torch.Tensor) -> torch.Tensor:
            # y = x*c + R(x)*s with R(x) = [-x2, x1]; R^T(v) = [v2, -v1] = -R(v), so dx = d*c - R(d*s).
            return d * cos - _rotate_half(d * sin)
        dq_in, dk_in = back(dq), back(dk)
        return dq_in.to(ctx.dtypes[0]), dk_in.to(ctx.dtypes[1]), None, None, None


@backend(OP, "fused")
def fused(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
          unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    return _FusedRope.apply(q, k, cos, sin, unsqueeze_dim)


@backend(OP, "compiled")
def compiled_(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
              unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    return compiled(reference)(q, k, cos, sin, unsqueeze_dim)


@backend(OP, "triton", devices=("cuda",), available=cuda_triton,
         note="CUDA; tested on CPU under TRITON_INTERPRET=1 in fp32")
def triton_(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
            unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    from kernels.triton_kernels.rope import rope

    return rope(q, k, cos, sin, unsqueeze_dim)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="torch_npu.npu_rotary_mul (rotate-half layout); NOT executed here (no Ascend device)")
def npu(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
        unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    import torch_npu

    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)
