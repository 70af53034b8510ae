"""What kind of machine a tuning table was measured on: the CPU capabilities that decide which backend wins.

A table records ``meta.machine`` (``capability()``) when the tuner writes it, and ``TuningTable.load`` ignores, with
a warning, a table recorded on another kind of machine: the winners depend on the matrix units. On an AVX2-only CPU
torch emulates bf16 GEMMs (~50x slower than fp32), so the fp32-GEMM backends win; on a CPU with AVX512-BF16 or AMX,
bf16 matmul runs faster than fp32 and the same table would slow training down. The key is the set of instruction
set flags that change GEMM speed (and the device type; on CUDA the GPU name), not the CPU model string, so two
machines of the same kind share tables and a different kind never does.
"""

from __future__ import annotations

import platform
from pathlib import Path

# /proc/cpuinfo flags that change which GEMM / elementwise backend is fastest.
GEMM_FLAGS = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
              "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "asimd", "sve", "sve2", "bf16", "i8mm")


def cpu_flags() -> set[str]:
    """The CPU's feature flags (x86 ``flags`` / ARM ``Features`` of /proc/cpuinfo; empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_capability(flags: set[str] | None = None) -> str:
    """``<arch>:<flag>+<flag>...``: the GEMM-relevant flags this CPU has, e.g. ``x86_64:avx+avx2+f16c+fma``."""
    have = cpu_flags() if flags is None else flags
    return f"{platform.machine()}:" + "+".join(sorted(f for f in GEMM_FLAGS if f in have))


def bf16_matmul_hw(flags: set[str] | None = None) -> bool:
    """bf16 matrix instructions (AVX512-BF16, AMX-BF16, ARM BF16): without them torch emulates bf16 GEMMs."""
    have = cpu_flags() if flags is None else flags
    return bool(have & {"avx512_bf16", "amx_bf16", "bf16"})


def capability(device: str = "cpu") -> str:
    """The key a tuning table is recorded under: the CPU capability, or ``cuda:<name>`` / ``npu``."""
    if device == "cuda":
        import torch

        return f"cuda:{torch.cuda.get_device_name()}" if torch.cuda.is_available() else "cuda:unavailable"
    if device == "npu":
        return "npu"  # not executed here (no Ascend device)
    return cpu_capability()
