"""The machine a benchmark ran on, for ``bench/results/<name>.json``: CPU model, cores, load, library versions.

Every bench records the same fields the same way, so results from different benches (and runs) compare. Import it as
``from bench._machine import machine, versions`` after putting the repository root on ``sys.path``.
"""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The ``model name`` line of /proc/cpuinfo; ``platform.processor()`` where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The SIMD flags of /proc/cpuinfo (x86 ``flags``, ARM ``Features``): they decide which dtype and kernel is fast
    (AVX2-only machines emulate bf16 GEMMs, AVX-512 BF16 ones run them ~2.8x faster than fp32), so every result
    records them."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return sorted(f for f in line.split(":", 1)[1].split()
                              if f.startswith(("avx", "sse", "fma", "f16c", "amx", "asimd", "sve", "bf16", "i8mm")))
    except OSError:
        pass
    return []


def versions(*dists: str) -> dict[str, str]:
    """Installed version of each distribution, ``missing`` for one that is not installed."""
    out = {}
    for dist in dists:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "missing"
    return out


def machine() -> dict[str, Any]:
    """CPU, cores, Python, platform, SIMD flags and the 1-minute load average (the machine is shared: load explains
    noise)."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "cpu_flags": cpu_flags(), "load_avg_1m": os.getloadavg()[0]}
