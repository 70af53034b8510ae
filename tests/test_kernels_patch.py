"""``kernels.apply`` / ``revert`` on the four HF families, and training with the patched model.

Loss tolerance over 20 fp32 AdamW steps: 1e-4 relative per step. The backends only reorder fp32 sums (roundoff
~6e-8 per operation); AdamW normalises each gradient by its running RMS, which can amplify such differences in tiny
gradients, but over 20 steps at lr 1e-3 they stay orders of magnitude below 1e-4. A wrong kernel (a dropped
gradient term, a wrong expert) moves the loss by more than 1e-2 within the first steps.
"""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels.table import TuningTable
from training.models import build_model
from training.moe import MoEBalancer

ALL = {"rms_norm": "fused", "swiglu": "fused", "rope": "fused", "moe_dispatch": "sorted", "moe_router": "fused",
       "fused_linear_cross_entropy": "chunked", "linear": "fp32_gemm", "attention": "sdpa"}
EXPECTED = {  # patched sites per op (tiny configs: 2 layers; linear: attention projections + MLP projections + lm_head)
    "qwen3_moe_tiny": {"rms_norm": 9, "moe_dispatch": 2, "moe_router": 2, "fused_linear_cross_entropy": 1, "rope": 1,
                       "linear": 9, "attention": 2},
    "deepseek_v3_tiny": {"rms_norm": 7, "swiglu": 2, "moe_dispatch": 1, "moe_router": 1,
                         "fused_linear_cross_entropy": 1, "rope": 1, "linear": 15, "attention": 2},
    "qwen3_tiny": {"rms_norm": 9, "swiglu": 2, "fused_linear_cross_entropy": 1, "rope": 1, "linear": 15,
                   "attention": 2},
    "llama_tiny": {"rms_norm": 5, "swiglu": 2, "fused_linear_cross_entropy": 1, "rope": 1, "linear": 15,
                   "attention": 2},
}
VOCAB = 256


def _batch(seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, 32), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("arch", list(EXPECTED))
def test_apply_patches_every_site_and_revert_restores(arch: str) -> None:
    model = build_model(arch, "", VOCAB, {}, 0)
    ids = _batch(0)
    before = model(input_ids=ids, labels=ids)
    assert kernels.apply(model, ALL) == EXPECTED[arch]
    patched = model(input_ids=ids, labels=ids)
    assert patched.logits is None  # the fused loss never built the logits
    # fp32 reorderings only: 1e-5 relative on a loss of ~5.5
    assert torch.allclose(patched.loss, before.loss, rtol=1e-5)
    no_labels = model(input_ids=ids)  # generation path: logits as usual
    assert torch.allclose(no_labels.logits, before.logits, rtol=1e-4, atol=1e-5)
    kernels.revert(model)
    assert kernels.patched_ops(model) == {}
    assert not any("forward" in m.__dict__ for m in model.modules())
    assert model.config._attn_implementation == "sdpa"  # the attention switch is undone too
    after = model(input_ids=ids, labels=ids)
    assert torch.equal(after.loss, before.loss) and torch.equal(after.logits, before.logits)


def _train(arch: str, table: dict[str, str] | None, steps: int = 20) -> tuple[list[float], dict[str, list[float]]]:
    model = build_model(arch, "", VOCAB, {}, 0)
    if table:
        kernels.apply(model, table)
    balancer = MoEBalancer(model, aux_coef=0.01, bias_rate=1e-3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    losses: list[float] = []
    loads: dict[str, list[float]] = {}
    for step in range(steps):
        ids = _batch(step)
        loss = model(input_ids=ids, labels=ids).loss
        aux = balancer.aux_loss()
        (loss + aux if aux is not None else loss).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loads = balancer.end_step(world=False)
        losses.append(float(loss.detach()))
    return losses, loads


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["qwen3_moe_tiny"])  # DeepSeek-V3: loss equality in the apply test
def test_patched_training_matches_unpatched_over_20_steps(arch: str) -> None:
    ref, ref_loads = _train(arch, None)
    got, loads = _train(arch, ALL)
    assert ref[-1] < ref[0]  # it trains
    for a, b in zip(got, ref, strict=True):
        assert abs(a - b) <= 1e-4 * abs(b), (got, ref)
    # The trainer's balancing hooks still see the routers (patched forwards return HF's triple).
    assert loads.keys() == ref_loads.keys() and loads


def test_table_file_round_trip_and_bad_table(tmp_path) -> None:  # noqa: ANN001
    from solvers.errors import ConfigError

    path = tmp_path / "table.json"
    TuningTable.uniform({"rms_norm": "fused"}).save(path)
    model = build_model("llama_tiny", "", VOCAB, {}, 0)
    assert kernels.apply(model, table=path) == {"rms_norm": 5}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError):
        kernels.apply(model, table=bad)
    with pytest.raises(ConfigError):
        kernels.apply(model, table=tmp_path / "missing.json")


FP32_GEMM = {"linear": "fp32_gemm", "attention": "sdpa_fp32", "moe_dispatch": "sorted_fp32",
             "fused_linear_cross_entropy": "chunked", "rms_norm": "fused", "moe_router": "fused"}


def _train_autocast(table: dict[str, str] | None, autocast: bool, steps: int = 20) -> list[float]:
    model = build_model("qwen3_moe_tiny", "", VOCAB, {}, 0)
    if table:
        kernels.apply(model, table)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    losses = []
    for step in range(steps):
        ids = _batch(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.slow
def test_fp32_gemm_table_under_bf16_autocast_matches_the_bf16_loss_curve() -> None:
    """The CPU-tuned table (every GEMM in fp32 inside bf16 autocast) trains like the unpatched bf16 model.

    Tolerance 2e-3 relative per step: the unpatched bf16 run itself differs from the fp32 run by ~3e-4 over these 20
    steps (bf16 rounding of activations and weights inside its GEMMs); the patched run differs from both by the same
    order. A wrong kernel (dropped gradient term, wrong expert) moves the loss by > 1e-2 within a few steps.
    """
    bf16 = _train_autocast(None, True)
    patched = _train_autocast(FP32_GEMM, True)
    fp32 = _train_autocast(None, False)
    assert bf16[-1] < bf16[0]
    for a, b in zip(patched, bf16, strict=True):
        assert abs(a - b) <= 2e-3 * abs(b), (patched, bf16)
    # and it is at least as close to the fp32 curve as bf16 GEMMs are (it rounds less), up to the same noise
    dev_patched = max(abs(a - b) / b for a, b in zip(patched, fp32, strict=True))
    dev_bf16 = max(abs(a - b) / b for a, b in zip(bf16, fp32, strict=True))
    assert dev_patched <= dev_bf16 + 2e-4, (dev_patched, dev_bf16)


def test_gemm_dtypes_follow_the_table() -> None:
    """What the trainer's MFU divides by: the dtypes the GEMM-bearing ops run in under a table."""
    from kernels.patch import gemm_dtypes

    assert gemm_dtypes({}, "cpu", "bfloat16") == {"bfloat16"}  # unpatched: autocast's bf16 GEMMs
    assert gemm_dtypes(FP32_GEMM, "cpu", "bfloat16") == {"float32"}
    assert gemm_dtypes({"linear": "fp32_gemm"}, "cpu", "bfloat16") == {"bfloat16", "float32"}  # MoE etc. stay bf16
    assert gemm_dtypes(FP32_GEMM, "cpu", "float32") == {"float32"}


@pytest.mark.parametrize("backend", ["chunked", "chunked_autocast"])
def test_patched_loss_sees_only_target_rows_and_matches_hf(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SFT labels (the prompt ignored): the patched forward hands the table's cross-entropy backend the target
    positions only (an ignored label adds no loss and no gradient), and the loss and every gradient equal the
    unpatched HF model's (fp32, no autocast: reorderings only)."""
    ids = _batch(3)
    labels = ids.clone()
    labels[:, :20] = -100  # the prompt: 20 of 32 positions per row; the last 12 are targets (shifted: positions 19-30)
    hf = build_model("llama_tiny", "", VOCAB, {}, 0)
    ref_loss = hf(input_ids=ids, labels=labels).loss
    ref_loss.backward()
    model = build_model("llama_tiny", "", VOCAB, {}, 0)
    kernels.apply(model, {"fused_linear_cross_entropy": backend})
    rows: list[int] = []
    dispatch = model._kernels_dispatch

    def spy(op: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if op == "fused_linear_cross_entropy":
            rows.append(args[0].shape[0])
        return dispatch(op, *args, **kwargs)

    monkeypatch.setattr(model, "_kernels_dispatch", spy)
    loss = model(input_ids=ids, labels=labels).loss
    loss.backward()
    assert rows == [2 * 12]
    assert torch.allclose(loss, ref_loss, rtol=1e-5)
    for (name, p), q in zip(model.named_parameters(), hf.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6), name


def test_a_table_on_which_eager_attention_won_patches_it_in() -> None:
    """Attention's ``reference`` is the eager formula, not what the unpatched model runs (sdpa): a table that chose
    it patches every attention site, the model then computes what HF's eager implementation computes, and revert
    brings sdpa back."""
    ids = _batch(4)
    eager = build_model("llama_tiny", "", VOCAB, {}, 0)
    eager.set_attn_implementation("eager")
    want = eager(input_ids=ids, labels=ids)
    model = build_model("llama_tiny", "", VOCAB, {}, 0)
    assert model.config._attn_implementation == "sdpa"
    assert kernels.apply(model, {"attention": "reference"}) == {"attention": 2}
    got = model(input_ids=ids, labels=ids)
    assert torch.allclose(got.logits, want.logits, rtol=1e-5, atol=1e-6)
    kernels.revert(model)
    assert model.config._attn_implementation == "sdpa"
    assert kernels.apply(model, {"rms_norm": "fused"}) == {"rms_norm": 5}  # no attention entry: left alone
