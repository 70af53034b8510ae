"""Every benchmark result records the SIMD flags that decide its dtypes (bench/_machine.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import cpu_flags, machine  # noqa: E402


def test_cpu_flags_keep_the_simd_flags_of_x86_and_arm(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor : 0\nflags : fpu vme avx2 fma avx512_bf16 amx_tile sse4_2 lm nx\n")
    assert cpu_flags(x86) == ["amx_tile", "avx2", "avx512_bf16", "fma", "sse4_2"]
    arm = tmp_path / "arm"
    arm.write_text("processor : 0\nFeatures : fp asimd evtstrm bf16 i8mm sve\n")
    assert cpu_flags(arm) == ["asimd", "bf16", "i8mm", "sve"]
    assert cpu_flags(tmp_path / "missing") == []


def test_machine_records_this_hosts_flags() -> None:
    info = machine()
    assert info["cpu_flags"] == cpu_flags()
    if Path("/proc/cpuinfo").exists() and " avx2 " in Path("/proc/cpuinfo").read_text():
        assert "avx2" in info["cpu_flags"]
