"""MFU's CPU peak (``kernels.peak``) is measured in the run's dtype on the model's own GEMM shapes, so a training
step's MFU cannot read above 100% (the old square-only bf16 peak sat below the skinny emulated-bf16 GEMMs of a tiny
model and the plain loop read 158-167%)."""

from __future__ import annotations

import time

import pytest
import torch

from kernels.peak import gemm_shapes
from training.flops import attention_shapes, device_peak, flops_per_token
from training.models import build_model


def test_gemm_shapes_cover_linears_and_experts() -> None:
    model = build_model("qwen3_moe_tiny", "", 128, {}, 0)
    shapes = gemm_shapes(model, 256)
    cfg = model.config
    assert (256, cfg.hidden_size, cfg.vocab_size) in shapes  # the LM head
    per_expert = 256 * cfg.num_experts_per_tok // cfg.num_experts
    assert any(m == per_expert for m, _, _ in shapes)  # stacked expert weights, tokens an expert sees on average


# bf16 is emulated on AVX2-only CPUs: its peak sweep takes ~1 min on a loaded 2-core machine, hence slow.
@pytest.mark.parametrize("dtype", [torch.float32, pytest.param(torch.bfloat16, marks=pytest.mark.slow)])
def test_step_mfu_is_at_most_one(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    rows, seq = 4, 64
    model = build_model("qwen3_moe_tiny", "", 128, {}, 0)
    ids = torch.randint(0, 128, (rows, seq))
    best = float("inf")
    for i in range(4):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        if i:
            best = min(best, time.perf_counter() - t0)
    shapes = gemm_shapes(model, rows * seq) + attention_shapes(model.config, seq)
    peak, _ = device_peak("cpu", dtype, shapes=tuple(shapes))
    mfu = flops_per_token(model, seq) * rows * seq / best / peak
    # The best step against the best GEMM rate on these shapes (under bf16 autocast the faster of bf16 and fp32:
    # some GEMMs stay fp32): every FLOP counted is a GEMM FLOP that runs no
    # faster than the peak, and the step does more than its GEMMs (norms, routing, softmax, optimizer-free backward).
    assert 0.0 < mfu <= 1.0, mfu
