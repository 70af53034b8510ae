"""A tuning table belongs to the kind of machine it was measured on (``kernels.machine``): loaded where it was
recorded, ignored with a warning on another CPU kind, never carried across."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernels.machine import bf16_matmul_hw, capability, cpu_capability
from kernels.table import TableMachineWarning, TuningTable


def test_capability_names_the_gemm_flags_only() -> None:
    avx2 = {"fpu", "sse2", "avx", "avx2", "fma", "f16c", "sha_ni", "rdrand"}
    sapphire = avx2 | {"avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}
    assert cpu_capability(avx2).endswith(":avx+avx2+f16c+fma")
    assert cpu_capability(avx2) != cpu_capability(sapphire)
    assert not bf16_matmul_hw(avx2) and bf16_matmul_hw(sapphire)


def test_table_loads_here_and_is_ignored_on_another_cpu_kind(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    TuningTable.uniform({"rms_norm": "fused", "linear": "fp32_gemm"}).save(path)
    raw = json.loads(path.read_text())
    assert raw["meta"]["machine"] == capability("cpu")
    assert TuningTable.load(path).choose("linear", "N=8,K=8", "bfloat16", "cpu") == "fp32_gemm"

    raw["meta"]["machine"] = "x86_64:amx_bf16+amx_tile+avx+avx2+avx512_bf16+avx512f+fma"  # a bf16-capable CPU
    path.write_text(json.dumps(raw))
    with pytest.warns(TableMachineWarning, match="recorded on x86_64:amx_bf16"):
        other = TuningTable.load(path)
    assert other.choose("linear", "N=8,K=8", "bfloat16", "cpu") == "reference"
    assert not other.entries and not other.defaults and "ignored" in other.meta

    del raw["meta"]["machine"]  # a table from before tables named their machine
    path.write_text(json.dumps(raw))
    with pytest.warns(TableMachineWarning, match="unrecorded machine"):
        assert TuningTable.load(path).choose("rms_norm", "D=8", "float32", "cpu") == "reference"
