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
    """CPU, cores, Python, platform and the 1-minute load average (the machine is shared: load explains noise)."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_1m": os.getloadavg()[0]}
