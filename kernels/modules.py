"""The module layer (Liger's middle layer): forwards and nn.Modules that route each op call through a table.

``Dispatch`` maps one call to a backend: the op's signature shape (``shape_key``) and the compute dtype (the autocast
dtype when autocast is on, else the input's) are looked up in the tuning table; the resolved function is cached per
key so the per-call cost is one dict lookup.

The ``*_forward`` functions have the exact signature of the HF module forward they replace and read the HF module's
own attributes and parameters (so patching keeps ``state_dict`` keys, hooks and FSDP wrapping unchanged).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from kernels import registry
from kernels.table import TuningTable, dtype_name


def compute_dtype(x: torch.Tensor) -> str:
    if torch.is_autocast_enabled(x.device.type):
        return dtype_name(torch.get_autocast_dtype(x.device.type))
    return dtype_name(x.dtype)


SHAPE_KEYS: dict[str, Callable[..., str]] = {
    "rms_norm": lambda x, weight, eps: f"D={x.shape[-1]}",
    "swiglu": lambda gate, up: f"F={gate.shape[-1]}",
    "rope": lambda q, k, cos, sin, unsqueeze_dim=1: f"D={q.shape[-1]}",
    "moe_router": lambda logits, top_k, mode="softmax", *a, n_group=1, **kw: (
        f"E={logits.shape[-1]},K={top_k},mode={mode},G={n_group}"),
    "moe_dispatch": lambda x, indices, weights, gate_up, down: (
        f"E={gate_up.shape[0]},D={x.shape[-1]},F={down.shape[-1]},K={indices.shape[-1]}"),
    "fused_linear_cross_entropy": lambda hidden, weight, labels, *a, **kw: f"V={weight.shape[0]},D={weight.shape[1]}",
    "linear": lambda x, weight, bias=None: f"N={weight.shape[0]},K={weight.shape[1]}",
    "attention": lambda q, k, v, mask, scaling: f"H={q.shape[1]},Hkv={k.shape[1]},D={q.shape[-1]}",
}


def shape_key(op: str, *args: Any, **kwargs: Any) -> str:
    return SHAPE_KEYS[op](*args, **kwargs)


def _detach(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.detach().clone().requires_grad_(a.requires_grad and a.is_floating_point())
    return a


class Dispatch:
    """Chooses and calls backends for one patched model (one table, one device)."""

    def __init__(self, table: TuningTable, device: str) -> None:
        self.table = table
        self.device = device
        self._cache: dict[tuple[str, str, str], Callable[..., Any]] = {}
        self.calls: dict[tuple[str, str], int] = {}  # (op, backend) -> calls, for logs and tests
        # Tuner mode: wrap every call in a profiler range and keep the first call's inputs per (op, shape, dtype).
        self.record = False
        self.captured: dict[tuple[str, str, str], tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def __call__(self, op: str, *args: Any, **kwargs: Any) -> Any:
        first = args[0]
        key = (op, shape_key(op, *args, **kwargs), compute_dtype(first))
        fn = self._cache.get(key)
        if fn is None:
            name = self.table.choose(op, key[1], key[2], self.device)
            b = registry.get(op, name)
            if not b.runs_on(self.device):
                name, b = "reference", registry.get(op, "reference")
            fn = self._cache[key] = b.fn
            self.calls[(op, name)] = 0
        if self.record:
            if key not in self.captured:
                self.captured[key] = (tuple(_detach(a) for a in args), {k: _detach(v) for k, v in kwargs.items()})
            with torch.profiler.record_function(f"kernels::{op}"):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    def chosen(self) -> dict[str, str]:
        return {op: name for (op, name) in self.calls}


# ---- forwards with the signatures of the HF modules they replace ------------------------------------------------

def linear_forward(self: nn.Module, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - nn.Linear's name
    return self._kernels_dispatch("linear", input, self.weight, self.bias)


def rms_norm_forward(self: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    return self._kernels_dispatch("rms_norm", hidden_states, self.weight, self.variance_epsilon)


def mlp_forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return self.down_proj(self._kernels_dispatch("swiglu", self.gate_proj(x), self.up_proj(x)))


def experts_forward(self: nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                    top_k_weights: torch.Tensor) -> torch.Tensor:
    return self._kernels_dispatch("moe_dispatch", hidden_states, top_k_index, top_k_weights, self.gate_up_proj,
                                  self.down_proj)


def softmax_router_forward(self: nn.Module, hidden_states: torch.Tensor):  # noqa: ANN201 - HF's triple
    hidden_states = hidden_states.reshape(-1, self.hidden_dim)
    logits = self._kernels_dispatch("linear", hidden_states, self.weight, None)
    weights, indices = self._kernels_dispatch("moe_router", logits, self.top_k, "softmax",
                                              norm_topk_prob=self.norm_topk_prob)
    return logits, weights, indices


def sigmoid_router_forward(self: nn.Module, hidden_states: torch.Tensor):  # noqa: ANN201 - HF's triple
    hidden_states = hidden_states.view(-1, self.hidden_dim)
    logits = nn.functional.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
    weights, indices = self._kernels_dispatch(
        "moe_router", logits, self.top_k, "sigmoid", norm_topk_prob=self.norm_topk_prob,
        bias=self.e_score_correction_bias, n_group=self.num_group, topk_group=self.topk_group,
        scaling=self.routed_scaling_factor)
    return logits, weights, indices


# ---- standalone modules (for code that builds its own models) ---------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, dispatch: Dispatch | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps
        self._kernels_dispatch = dispatch or Dispatch(TuningTable(), "cpu")

    forward = rms_norm_forward


class SwiGLUMLP(nn.Module):
    def __init__(self, dim: int, hidden: int, dispatch: Dispatch | None = None) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self._kernels_dispatch = dispatch or Dispatch(TuningTable(), "cpu")

    forward = mlp_forward


class LinearCrossEntropy(nn.Module):
    """Loss of ``hidden @ weight.T`` against labels through the table's fused linear cross-entropy backend."""

    def __init__(self, dispatch: Dispatch | None = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.ignore_index = ignore_index
        self.reduction = reduction
        self._kernels_dispatch = dispatch or Dispatch(TuningTable(), "cpu")

    def forward(self, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._kernels_dispatch("fused_linear_cross_entropy", hidden.reshape(-1, hidden.shape[-1]), weight,
                                      labels.reshape(-1), self.ignore_index, self.reduction)
