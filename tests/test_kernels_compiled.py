"""``compiled`` backends (torch.compile) on one small shape each, fp32: compilation takes tens of seconds per op on a
2-core CPU, so only a few shapes. Tolerance: ``kernels.verify``'s fp32 1e-4 relative (Inductor fuses and reorders
reductions, fp32 roundoff stays far below)."""

from __future__ import annotations

import pytest
import torch

from kernels.verify import compare


def _leaf(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_(True)


CASES = [
    ("rms_norm", (_leaf(4, 32), _leaf(32, seed=1), 1e-6)),
    ("swiglu", (_leaf(4, 32), _leaf(4, 32, seed=1))),
]


@pytest.mark.slow
@pytest.mark.parametrize(("op", "args"), CASES, ids=[c[0] for c in CASES])
def test_compiled_matches_reference(op: str, args: tuple) -> None:
    check = compare(op, "compiled", args, {}, "float32")
    assert check.ok, check.detail
