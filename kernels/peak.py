"""The device's matmul peak, used for MFU on CPU.

One way to do it: the trainer's ``training.flops.measure_cpu_peak`` (best of repeated square matmuls in the run's
dtype) is the measurement; this module only sweeps sizes and dtypes around it for ``flywheel kernels peak`` and
reports the best, so the CLI and the trainer cannot disagree on the method.
"""

from __future__ import annotations

import torch


def measure(dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16),
            sizes: tuple[int, ...] = (64, 128, 256, 512), repeats: int = 5) -> list[dict[str, float | str | int]]:
    from training import flops

    rows: list[dict[str, float | str | int]] = []
    for dtype in dtypes:
        for size in sizes:
            value = flops.measure_cpu_peak(dtype, size=size, repeats=repeats)  # one size: measured afresh
            rows.append({"dtype": str(dtype).removeprefix("torch."), "size": size, "gflops": value / 1e9})
    return rows
