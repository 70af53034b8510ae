"""Numerics of every eager backend against ``reference``: grids of shape x dtype, forward and backward.

Tolerances are ``kernels.verify.TOLERANCE`` (relative to the reference's largest magnitude): fp32 1e-4 (backends only
reorder float sums; fp32 roundoff is 6e-8, sums of <= 10^4 terms stay far inside 1e-4), bf16 autocast 6e-2 (~15 bf16
ulps of 2^-8: a backend computing in fp32 where the reference rounds to bf16 after each GEMM differs by a few
roundings per GEMM, a wrong formula by O(1)). ``compare`` checks outputs and the gradients of every input.
"""

from __future__ import annotations

import pytest
import torch

from kernels import registry
from kernels.benchmark import flce_case, moe_case
from kernels.verify import compare, variants

DTYPES = ["float32", "bfloat16"]


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _leaf(*shape: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=_g(seed)) * scale).requires_grad_(True)


def _eager(op: str) -> list[str]:
    """Backends that run here without compilation (compiled: test_kernels_compiled, triton: test_kernels_triton)."""
    return [b.name for b in registry.backends(op, "cpu") if b.name not in ("reference", "compiled")]


def _packed_mask(batch: int, seq: int, doc: int) -> torch.Tensor:
    """The boolean (B, 1, S, S) mask transformers builds for packed rows: causal within documents of ``doc``."""
    pos = torch.arange(seq)
    same_doc = (pos[:, None] // doc) == (pos[None, :] // doc)
    return (same_doc & (pos[None, :] <= pos[:, None])).expand(batch, 1, seq, seq)


def _docs_mask(lengths: list[list[int]]) -> torch.Tensor:
    """Block-causal (B, 1, S, S) mask of rows packed with documents of the given lengths (rows may differ)."""
    rows = []
    for row in lengths:
        doc = torch.repeat_interleave(torch.arange(len(row)), torch.tensor(row))
        rows.append((doc[:, None] == doc[None, :]) & torch.ones(len(doc), len(doc), dtype=torch.bool).tril())
    return torch.stack(rows)[:, None]


def _padding_mask(seq: int) -> torch.Tensor:
    """Causal with the last two keys padded out: not block-causal (backends must honour it as it is)."""
    m = torch.ones(seq, seq, dtype=torch.bool).tril()
    m[:, -2:] = False
    m[-2:, -2:] = torch.eye(2, dtype=torch.bool)  # padded queries see themselves (no empty softmax row)
    return m.expand(2, 1, seq, seq)


CASES = {
    "rms_norm": [((_leaf(3, 7, 64), _leaf(64, seed=1), 1e-6), {}), ((_leaf(5, 4, 16, 16), _leaf(16, seed=2), 1e-5), {})],
    "swiglu": [((_leaf(9, 128), _leaf(9, 128, seed=1)), {}), ((_leaf(2, 5, 33), _leaf(2, 5, 33, seed=1)), {})],
    "rope": [((_leaf(2, 4, 9, 16), _leaf(2, 2, 9, 16, seed=1), torch.randn(2, 9, 16, generator=_g(2)).cos(),
               torch.randn(2, 9, 16, generator=_g(3)).sin()), {})],
    "fused_linear_cross_entropy": [flce_case(37, 32, 500), flce_case(64, 16, 3000)],
    "moe_dispatch": [moe_case(50, 32, 24, 4, 2), moe_case(31, 16, 8, 8, 3)],
    "attention": [((_leaf(2, 4, 11, 16), _leaf(2, 2, 11, 16, seed=1), _leaf(2, 2, 11, 16, seed=2), None, 0.25), {}),
                  ((_leaf(2, 4, 12, 16), _leaf(2, 2, 12, 16, seed=1), _leaf(2, 2, 12, 16, seed=2),
                    _packed_mask(2, 12, 5), 0.25), {}),
                  # documents of different lengths per row, one of a single token
                  ((_leaf(2, 6, 13, 16), _leaf(2, 2, 13, 16, seed=1), _leaf(2, 2, 13, 16, seed=2),
                    _docs_mask([[4, 1, 8], [13]]), 0.25), {}),
                  ((_leaf(2, 4, 10, 16), _leaf(2, 4, 10, 16, seed=1), _leaf(2, 4, 10, 16, seed=2),
                    _padding_mask(10), 0.25), {})],
    "linear": [((_leaf(2, 9, 64), _leaf(32, 64, seed=1, scale=0.1), None), {}),
               ((_leaf(17, 48), _leaf(80, 48, seed=1, scale=0.1), _leaf(80, seed=2)), {})],
}
GRID = [(op, i, b, dt) for op, cases in CASES.items() for i in range(len(cases)) for b in _eager(op) for dt in DTYPES]


@pytest.mark.parametrize(("op", "case", "backend", "dtype"), GRID)
def test_backend_matches_reference(op: str, case: int, backend: str, dtype: str) -> None:
    args, kwargs = CASES[op][case]
    if backend == "grouped_mm" and dtype == "float32":
        pytest.skip("torch._grouped_mm has no fp32 CPU kernel in torch 2.13 (the tuner records it as failed)")
    for name, inputs in variants(op, args):
        check = compare(op, backend, inputs, kwargs, dtype)
        assert check.ok, f"{op}/{backend}/{dtype} on {name} inputs: {check.detail}"


def test_flce_chunks_and_ignored_labels() -> None:
    """More chunks than one (tiny chunk size), several gradient blocks (each one d_hidden / d_weight GEMM), a run of
    ignored labels (skipped rows): the same loss and gradients; a batch with no target at all: zero loss and zero
    gradients, not an error."""
    from kernels.ops import fused_linear_cross_entropy as flce

    args, _ = flce_case(40, 16, 300)
    args[2][:10] = -100
    old = flce.CHUNK_ELEMENTS, flce.GRAD_ELEMENTS
    flce.CHUNK_ELEMENTS, flce.GRAD_ELEMENTS = 300 * 7, 300 * 16  # 7 rows per chunk, 16 (3 chunks) per block
    try:
        for backend in ("chunked", "chunked_autocast"):
            for reduction in ("sum", "mean"):
                check = compare("fused_linear_cross_entropy", backend, (*args[:4], reduction), {}, "float32")
                assert check.ok, f"{backend}/{reduction}: {check.detail}"
        hidden = args[0].detach().clone().requires_grad_(True)
        weight = args[1].detach().clone().requires_grad_(True)
        loss = flce.chunked(hidden, weight, torch.full((40,), -100), -100, "sum")
        loss.backward()
        assert float(loss.detach()) == 0.0
        assert hidden.grad is not None and weight.grad is not None
        assert not hidden.grad.any() and not weight.grad.any()
    finally:
        flce.CHUNK_ELEMENTS, flce.GRAD_ELEMENTS = old


ROUTER_CASES = [
    ("softmax", 4, 2, {}),
    ("softmax", 16, 4, {"norm_topk_prob": False}),
    ("sigmoid", 8, 2, {"bias": torch.randn(8, generator=_g(5)) * 0.1}),
    ("sigmoid", 64, 6, {"bias": torch.randn(64, generator=_g(6)) * 0.1, "n_group": 8, "topk_group": 4,
                        "scaling": 2.5}),
]


@pytest.mark.parametrize(("mode", "experts", "k", "kw"), ROUTER_CASES)
@pytest.mark.parametrize("backend", ["fused"])
def test_router_selects_exactly_the_reference_experts(mode: str, experts: int, k: int, kw: dict,
                                                      backend: str) -> None:
    logits = _leaf(300, experts, seed=7)
    for name, inputs in variants("moe_router", (logits, k, mode)):
        check = compare("moe_router", backend, inputs, kw, "float32")
        assert check.ok, f"{mode} E={experts} k={k} on {name}: {check.detail}"


def test_router_group_limit_is_respected() -> None:
    """DeepSeek-V3 group-limited choice: every chosen expert lies in one of the topk_group best groups."""
    fn = registry.get("moe_router").fn
    logits = torch.randn(200, 16, generator=_g(8))
    _, idx = fn(logits, 4, "sigmoid", bias=torch.zeros(16), n_group=4, topk_group=2)
    assert all(len(set(row.tolist())) <= 2 for row in idx // 4)


def test_fp32_gemm_keeps_autocast_dtypes_and_is_closer_to_the_fp32_oracle() -> None:
    """``linear/fp32_gemm`` under bf16 autocast: output bf16 like the reference (the next op sees the same dtype),
    weight gradient fp32 like the reference, and its error against the fp32 function below the bf16 reference's (it
    does not round the fp32 weight to 8 mantissa bits)."""
    from kernels.verify import run

    args, _ = CASES["linear"][0]
    ref_fn, fp32_fn = registry.get("linear").fn, registry.get("linear", "fp32_gemm").fn
    (ref,), ref_g = run(ref_fn, args, {}, "bfloat16", "cpu")
    (got,), got_g = run(fp32_fn, args, {}, "bfloat16", "cpu")
    (oracle,), _ = run(ref_fn, args, {}, "float32", "cpu")
    assert got.dtype == ref.dtype == torch.bfloat16
    assert [g.dtype for g in got_g if g is not None] == [g.dtype for g in ref_g if g is not None]
    assert (got.float() - oracle).abs().max() < (ref.float() - oracle).abs().max()
    assert registry.get("linear", "fp32_gemm").gemm == "float32" and registry.get("linear").gemm == ""


def test_wrong_backend_is_rejected() -> None:
    """The checker must fail a wrong formula (otherwise the grid above proves nothing)."""
    registry.backend("swiglu", "wrong_for_test", devices=("cpu",))(lambda g, u: torch.sigmoid(g) * u)
    try:
        args, _ = CASES["swiglu"][0]
        assert not compare("swiglu", "wrong_for_test", args, {}, "float32").ok
        assert not compare("swiglu", "wrong_for_test", args, {}, "bfloat16").ok
    finally:
        del registry.OPS["swiglu"]["wrong_for_test"]


def test_the_fp32_oracle_runs_on_mixed_dtype_inputs_captured_under_autocast(monkeypatch) -> None:
    """Under CUDA autocast the captured attention inputs mix dtypes (q / k fp32 out of RoPE, v bf16 out of a
    linear). A bf16 candidate past the bf16 tolerance is re-checked against the reference in fp32; that oracle must
    upcast its inputs, not multiply fp32 probabilities with a bf16 v outside autocast (it raised on the H200)."""
    import kernels.verify as verify

    monkeypatch.setitem(verify.TOLERANCE, "bfloat16", 0.0)  # force the oracle path on any rounding at all
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 16, 8, generator=g).requires_grad_(True)
    k = torch.randn(1, 2, 16, 8, generator=g).requires_grad_(True)
    v = torch.randn(1, 2, 16, 8, generator=g).to(torch.bfloat16).requires_grad_(True)
    check = compare("attention", "sdpa", (q, k, v, None, 8 ** -0.5), {}, "bfloat16")
    assert check.max_error < 6e-2, check  # against the fp32 oracle the bf16 candidate is within bf16 rounding
    up = verify.upcast_args((q, v, torch.ones(2, dtype=torch.bool)))
    assert [a.dtype for a in up] == [torch.float32, torch.float32, torch.bool] and up[1].requires_grad


def test_segments_reads_documents_from_block_causal_masks_only() -> None:
    from kernels.ops.attention import documents

    assert documents(_docs_mask([[4, 1, 8], [13]]), 13, 13) == [[(0, 4), (4, 5), (5, 13)], [(0, 13)]]
    additive = torch.zeros(1, 1, 6, 6).masked_fill(~_docs_mask([[2, 4]]), torch.finfo(torch.float32).min)
    assert documents(additive, 6, 6) == [[(0, 2), (2, 6)]]  # transformers' additive float form
    assert documents(_padding_mask(10), 10, 10) is None  # padding: not documents, the masked path runs
    assert documents(torch.ones(1, 1, 5, 5, dtype=torch.bool), 5, 5) is None  # bidirectional
    assert documents(None, 5, 5) is None and documents(_docs_mask([[3, 2]]), 2, 5) is None  # decoding
