"""SwiGLU gating: ``silu(gate) * up`` (the middle of every Qwen3 / Llama / DeepSeek-V3 MLP and expert)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.ops._compile import compiled
from kernels.registry import backend, cuda_triton, has_module

OP = "swiglu"


@backend(OP, "reference")
def reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return F.silu(gate) * up


class _FusedSwiGLU(torch.autograd.Function):
    """Saves gate and up only and recomputes silu in backward (eager keeps silu(gate) as well)."""

    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, dy: torch.Tensor):  # noqa: ANN001, ANN205
        gate, up = ctx.saved_tensors
        g = gate.to(torch.float32)
        sig = torch.sigmoid(g)
        silu = g * sig
        d_up = (dy.to(torch.float32) * silu).to(up.dtype)
        # d silu / d g = sig * (1 + g * (1 - sig))
        d_gate = (dy.to(torch.float32) * up.to(torch.float32) * sig * (1 + g * (1 - sig))).to(gate.dtype)
        return d_gate, d_up


@backend(OP, "fused")
def fused(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return _FusedSwiGLU.apply(gate, up)


@backend(OP, "compiled")
def compiled_(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return compiled(reference)(gate, up)


@backend(OP, "triton", devices=("cuda",), available=cuda_triton,
         note="CUDA; tested on CPU under TRITON_INTERPRET=1 in fp32")
def triton_(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    from kernels.triton_kernels.swiglu import swiglu

    return swiglu(gate, up)


@backend(OP, "npu", devices=("npu",), available=has_module("torch_npu"),
         note="torch_npu.npu_swiglu on cat([gate, up]); NOT executed here (no Ascend device)")
def npu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    import torch_npu

    # npu_swiglu splits its input in two along dim: the first half is the gate (silu), the second the up projection.
    return torch_npu.npu_swiglu(torch.cat([gate, up], dim=-1), dim=-1)
