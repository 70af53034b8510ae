"""Model FLOPs per token, device peak FLOPs, and MFU.

FLOPs per trained token = 6 x N_active + 12 x L x H x d_head x S

* 6 x N_active: every matmul weight W (d_in x d_out) costs 2 d_in d_out FLOPs per token forward (a multiply and an
  add per weight) and twice that backward (gradient w.r.t. the input and w.r.t. the weight): 6 per weight. Only
  *active* weights count: attention and dense MLP projections, routers, shared experts and the LM head fully; routed
  expert weights x (top_k / n_experts), since each token visits top_k of them. The embedding is a lookup, not a
  matmul, and norms are O(d): both are left out (the PaLM / Megatron convention).
* 12 x L x H x d_head x S: per layer, QK^T and attention x V are each 2 x S x H x d_head FLOPs per query token
  forward, x 3 for forward + backward = 12 L H d_head S. S is the row length (the convention counts the full square
  even though causal masking and packing skip part of it, so MFU is comparable across papers and runs).

MFU = achieved FLOPs/s / peak FLOPs/s. Peak comes from a device table (dense bf16 tensor-core figures from vendor
data sheets) or, on CPU, from matmuls measured on this machine in the dtype the GEMMs run in (the run's dtype, or
fp32 where a kernel table computes the GEMMs in fp32: ``kernels.patch.gemm_dtypes``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from kernels.peak import PEAK_SIZES, measure_cpu_peak  # noqa: F401  (re-exported: the one peak measurement)

# Dense (no sparsity) bf16 peak FLOPs/s per device, from vendor data sheets.
PEAK_FLOPS: dict[str, float] = {
    "A100": 312e12,      # NVIDIA A100 SXM/PCIe, bf16 tensor core
    "H100": 989e12,      # NVIDIA H100 SXM, bf16 dense
    "H200": 989e12,      # NVIDIA H200: H100 compute, more HBM
    "Ascend910B": 313e12,  # Huawei Ascend 910B (910B3-class), fp16/bf16 cube
    "Ascend910C": 752e12,  # Huawei Ascend 910C: two 910B-class dies per package
}


def _attn_dims(config: Any) -> tuple[int, int, int]:
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    # DeepSeek-V3 MLA: scores use qk_nope + qk_rope dims, values v_head_dim; take the query/key width for both
    # terms (QK^T) and the value width for AV, averaged, which is exact when they are equal.
    if hasattr(config, "qk_rope_head_dim") and getattr(config, "qk_nope_head_dim", None) is not None:
        qk = int(config.qk_rope_head_dim + config.qk_nope_head_dim)
        return layers, heads, (qk + int(config.v_head_dim)) // 2
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return layers, heads, int(head_dim)


def active_matmul_params(model: nn.Module) -> float:
    """Matmul weights a token passes through (routed experts scaled by top_k / n_experts); see module docstring."""
    config = model.config
    n_experts = getattr(config, "num_experts", None) or getattr(config, "n_routed_experts", None)
    top_k = getattr(config, "num_experts_per_tok", None)
    total = 0.0
    for name, p in model.named_parameters():
        if p.dim() < 2 or "embed_tokens" in name:
            continue
        numel = float(p.numel())
        if n_experts and top_k and ".experts." in f"{name}." and ".shared_experts" not in name:
            numel *= top_k / n_experts
        total += numel
    return total


def head_matmul_params(model: nn.Module) -> float:
    """The output head's share of ``active_matmul_params`` (0 when it is tied to the embedding, which is left out
    there): the trainer runs the head on target tokens only, so MFU counts 6 x this per target token, not per token."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is None:
        return 0.0
    counted = {id(p) for name, p in model.named_parameters() if p.dim() >= 2 and "embed_tokens" not in name}
    return float(weight.numel()) if id(weight) in counted else 0.0


def flops_per_token(model: nn.Module, seq_len: int) -> float:
    return 6.0 * active_matmul_params(model) + attention_flops_coef(model.config) * seq_len


def attention_flops_coef(config: Any) -> float:
    """12 x L x H x d_head: a token's attention FLOPs per unit of row length (module docstring)."""
    layers, heads, head_dim = _attn_dims(config)
    return 12.0 * layers * heads * head_dim


def batch_flops(model: nn.Module, rows: int, seq_len: int, head_tokens: int | None = None,
                params: tuple[float, float] | None = None) -> float:
    """Model FLOPs of training on ``rows`` x ``seq_len`` tokens whose output head ran on ``head_tokens`` of them
    (all when None). ``params``: precomputed (active_matmul_params, head_matmul_params)."""
    active, head = params or (active_matmul_params(model), head_matmul_params(model))
    tokens = rows * seq_len
    skipped = 0 if head_tokens is None else tokens - head_tokens
    return tokens * (6.0 * active + attention_flops_coef(model.config) * seq_len) - skipped * 6.0 * head


def attention_shapes(config: Any, seq_len: int) -> list[tuple[int, int, int]]:
    """The (M, K, N) of one head's QK^T and attention x V at ``seq_len``: GEMMs the MFU peak must also bound."""
    _, _, head_dim = _attn_dims(config)
    return [(seq_len, head_dim, seq_len), (seq_len, seq_len, head_dim)]


def device_peak(device: str, dtype: torch.dtype,
                shapes: tuple[tuple[int, int, int], ...] = ()) -> tuple[float, str]:
    """(peak FLOPs/s, where it came from) for the device a run trains on. On CPU the peak is measured in ``dtype``
    over the square sweep and the model's own GEMM ``shapes`` (``kernels.peak.gemm_shapes`` +
    ``attention_shapes``), so MFU stays <= 100% (a square-only bf16 peak sat below skinny emulated-bf16 GEMMs)."""
    if device == "cuda" and torch.cuda.is_available():
        name = torch.cuda.get_device_name()
        for key, value in PEAK_FLOPS.items():
            if key in name.replace(" ", ""):
                return (value if dtype == torch.bfloat16 else value / 2), f"table:{key}"
    if device == "npu":
        # Not executed here (no Ascend device on this machine): torch_npu exposes the SoC name this way.
        import torch_npu  # noqa: F401

        name = torch.npu.get_device_name()  # type: ignore[attr-defined]
        key = "Ascend910C" if "910C" in name or "910_93" in name else "Ascend910B"
        return PEAK_FLOPS[key], f"table:{key}"
    kind = "+model-shapes" if shapes else ""
    peak = measure_cpu_peak(dtype, shapes=shapes)
    if dtype == torch.float32:
        return peak, f"measured:cpu-float32-matmul{kind}"
    # Under bf16 autocast some GEMMs still run in fp32 (ops off autocast's list, fp32-GEMM kernel backends), and
    # on AVX2-only CPUs fp32 is far faster than emulated bf16: the bound any counted FLOP obeys is the faster peak.
    fp32 = measure_cpu_peak(torch.float32, shapes=shapes)
    return max(peak, fp32), f"measured:cpu-max({str(dtype).removeprefix('torch.')},float32)-matmul{kind}"
