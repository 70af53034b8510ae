"""The compute dtype by measurement: time one GEMM of the model's own MLP shape in fp32 and in bf16 on this device
and keep bf16 only when it is clearly faster.

Why measure: CPUs with AVX-512 BF16 / AMX run bf16 GEMMs at up to twice the fp32 rate, AVX2-only CPUs emulate them
several times slower, GPUs and NPUs are fast in bf16; the CPU flags alone do not say what oneDNN will pick. The
1.15x margin keeps noise on a shared machine from flipping the choice (bf16 also costs accuracy, so a tie is fp32).
"""

from __future__ import annotations

import time
from typing import Any

import torch

MARGIN = 1.15


def _gflops(m: int, k: int, n: int, dtype: torch.dtype, device: str, reps: int) -> float:
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(m, k, generator=gen).to(device, dtype)
    b = torch.randn(k, n, generator=gen).to(device, dtype)
    times = []
    for _ in range(reps + 1):  # the first call pays oneDNN's primitive creation
        t0 = time.perf_counter()
        (a @ b).sum().item()
        times.append(time.perf_counter() - t0)
    best = sorted(times[1:])[len(times[1:]) // 2]
    return 2 * m * k * n / best / 1e9


def probe_dtype(hidden: int, ffn: int, tokens: int, device: str = "cpu", reps: int = 2) -> dict[str, Any]:
    """``{"fp32_gflops", "bf16_gflops", "chosen": "fp32" | "bf16", "shape"}`` for a (tokens x hidden x ffn) GEMM."""
    m, k, n = max(64, min(tokens, 256)), max(64, hidden), max(64, ffn)
    fp32 = _gflops(m, k, n, torch.float32, device, reps)
    try:
        bf16 = _gflops(m, k, n, torch.bfloat16, device, reps)
    except RuntimeError:  # a device without bf16 matmul
        bf16 = 0.0
    return {"fp32_gflops": round(fp32, 2), "bf16_gflops": round(bf16, 2), "shape": [m, k, n],
            "chosen": "bf16" if bf16 > MARGIN * fp32 else "fp32"}
