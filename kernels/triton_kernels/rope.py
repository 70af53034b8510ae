"""Rotate-half RoPE in Triton: one program per (batch, head, position) row; backward = rotation by -angle."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rope(X, COS, SIN, Y, H, S, D, sign, HALF: tl.constexpr):
    pid = tl.program_id(0)  # row of the flattened (B, H, S) grid
    b = pid // (H * S)
    s = pid % S
    cols = tl.arange(0, HALF)
    m = cols < D // 2
    x1 = tl.load(X + pid * D + cols, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(X + pid * D + D // 2 + cols, mask=m, other=0.0).to(tl.float32)
    base = (b * S + s) * D
    c1 = tl.load(COS + base + cols, mask=m, other=0.0).to(tl.float32)
    c2 = tl.load(COS + base + D // 2 + cols, mask=m, other=0.0).to(tl.float32)
    s1 = tl.load(SIN + base + cols, mask=m, other=0.0).to(tl.float32) * sign
    s2 = tl.load(SIN + base + D // 2 + cols, mask=m, other=0.0).to(tl.float32) * sign
    # y = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]
    tl.store(Y + pid * D + cols, (x1 * c1 - x2 * s1).to(Y.dtype.element_ty), mask=m)
    tl.store(Y + pid * D + D // 2 + cols, (x2 * c2 + x1 * s2).to(Y.dtype.element_ty), mask=m)


def _apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, sign: float) -> torch.Tensor:
    B, H, S, D = x.shape
    xc = x.contiguous()
    y = torch.empty_like(xc)
    _rope[(B * H * S,)](xc, cos, sin, y, H, S, D, sign, HALF=triton.next_power_of_2(D // 2))
    return y


class RopeFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):  # noqa: ANN001, ANN205
        B, S = q.shape[0], q.shape[2]
        cos = cos.expand(B, S, -1).contiguous()
        sin = sin.expand(B, S, -1).contiguous()
        ctx.save_for_backward(cos, sin)
        return _apply(q, cos, sin, 1.0), _apply(k, cos, sin, 1.0)

    @staticmethod
    def backward(ctx, dq: torch.Tensor, dk: torch.Tensor):  # noqa: ANN001, ANN205
        cos, sin = ctx.saved_tensors
        # The rotation is orthogonal: its transpose is the rotation by -angle (sin -> -sin).
        return _apply(dq, cos, sin, -1.0), _apply(dk, cos, sin, -1.0), None, None


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
         unsqueeze_dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    if unsqueeze_dim != 1 or q.dim() != 4:
        raise NotImplementedError("triton rope takes (B, H, S, D) q/k with unsqueeze_dim=1")
    return RopeFn.apply(q, k, cos, sin)
