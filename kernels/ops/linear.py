"""Dense projection ``y = x @ W.T (+ b)``: every ``nn.Linear`` of the model (attention q / k / v / o, dense MLPs).

Signature: ``fn(x_..D, weight_ND, bias_N | None) -> y_..N``, the output in the dtype the reference gives (the autocast
dtype under autocast, else the input's), so callers downstream see the same dtypes whichever backend runs.

* ``reference``: ``F.linear`` as the HF module calls it; under bf16 autocast the GEMM runs in bf16.
* ``fp32_gemm``: the GEMM in fp32 (inputs upcast inside the op, the result cast back to the autocast dtype). bf16
  storage and autocast semantics stay (activations leave the op in bf16, weight gradients are fp32 as under
  autocast); only the GEMM's arithmetic changes. It wins where the device has no bf16 matrix units: a CPU without
  AVX512-BF16 / AMX (e.g. an AVX2-only AMD EPYC) emulates bf16 GEMMs, measured ~58x slower than fp32 there. It is
  also closer to the fp32 oracle (the weight is not rounded to 8 mantissa bits). On GPUs / NPUs with bf16 tensor
  cores it loses, and the tuner then keeps ``reference``: it is never chosen except by timing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.registry import backend

OP = "linear"


def out_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype autocast would give this op's output (the input's dtype outside autocast)."""
    dev = x.device.type
    return torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else x.dtype


@backend(OP, "reference")
def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    return F.linear(x, weight, bias)


@backend(OP, "fp32_gemm", gemm="float32",
         note="GEMM in fp32, result cast to the autocast dtype: for devices without bf16 matrix units")
def fp32_gemm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    dtype = out_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        y = F.linear(x.float(), weight.float(), None if bias is None else bias.float())
    return y.to(dtype)
