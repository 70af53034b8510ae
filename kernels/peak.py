"""The device's matmul peak, used for MFU on CPU.

One way to do it: the trainer's ``training.flops.measure_cpu_peak`` (best of repeated square matmuls in the run's
dtype) is the measurement; this module only sweeps sizes and dtypes around it for ``flywheel kernels peak`` and
reports the best, so the CLI and the trainer cannot disagree on the method.
"""

from __future__ import annotations

import torch


def measure(dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16),
            sizes: tuple[int, ...] = (256, 512, 1024), repeats: int = 5) -> list[dict[str, float | str | int]]:
    from training import flops

    rows: list[dict[str, float | str | int]] = []
    for dtype in dtypes:
        for size in sizes:
            flops._cpu_peak_cache.pop(str(dtype), None)  # a fresh measurement per size
            value = flops.measure_cpu_peak(dtype, size=size, repeats=repeats)
            rows.append({"dtype": str(dtype).removeprefix("torch."), "size": size, "gflops": value / 1e9})
        flops._cpu_peak_cache.pop(str(dtype), None)
    return rows
