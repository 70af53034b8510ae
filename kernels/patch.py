"""Model patching (Liger's top layer): ``apply(model, table=...)`` swaps HF module forwards for table-chosen kernels,
in place and reversibly (``revert(model)``).

Modules are matched by shape, not by class list, with rules for the four supported families (transformers 5.x):

* ``rms_norm``: ``Qwen3MoeRMSNorm``, ``DeepseekV3RMSNorm``, ``Qwen3RMSNorm``, ``LlamaRMSNorm`` (``weight`` +
  ``variance_epsilon``);
* ``swiglu``: ``Qwen3MoeMLP``, ``DeepseekV3MLP`` (incl. shared experts), ``Qwen3MLP``, ``LlamaMLP`` with SiLU;
* ``moe_dispatch``: ``Qwen3MoeExperts``, ``DeepseekV3Experts`` (3-D ``gate_up_proj`` / ``down_proj``, SiLU);
* ``moe_router``: ``Qwen3MoeTopKRouter`` (softmax) and ``DeepseekV3TopkRouter`` (sigmoid + bias + groups); the
  patched forward returns HF's ``(logits, weights, indices)`` so the trainer's balancing hooks see the same thing;
* ``fused_linear_cross_entropy``: the ``*ForCausalLM`` forward, when called with ``labels`` (HF semantics: labels
  shifted by one, mean over non-ignored, or a sum / ``num_items_in_batch`` when that is given; ``shift_labels``
  accepted as HF does). The loss comes without logits (``logits=None``): that is the point;
* ``linear``: every ``nn.Linear`` (attention projections, dense MLP projections) and the softmax router's gate GEMM;
* ``attention``: the model's attention implementation (HF's attention interface): a function registered under
  ``flywheel_kernels`` (masks built as for SDPA) routes each call through the table; models configured with
  ``sdpa`` or ``eager`` are switched to it and switched back by ``revert``. Dropout or sliding windows fall back
  to HF's SDPA;
* ``rope``: the modeling module's ``apply_rotary_pos_emb`` (a module-level function in transformers, so this patch is
  process-wide while any patched model of that family exists; reference-counted and restored by ``revert``).

A patch sets ``module.forward`` on the instance (the class is untouched), so hooks, ``state_dict`` keys and FSDP2
wrapping are unaffected; ``revert`` deletes those instance attributes. Ops the table does not mention, or maps only
to ``reference``, are left as HF wrote them.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from kernels import modules
from kernels.modules import Dispatch
from kernels.table import TuningTable

IGNORE_INDEX = -100


def _silu(m: nn.Module) -> bool:
    """The activation computes SiLU (HF's ACT2FN["silu"] is its own class): checked on sample values."""
    act = getattr(m, "act_fn", None)
    if not callable(act):
        return False
    x = torch.linspace(-4, 4, 9)
    return bool(torch.allclose(act(x), F.silu(x)))


@dataclass(frozen=True)
class Rule:
    op: str
    matches: Callable[[nn.Module], bool]
    forward: Callable[..., Any]


RULES: list[Rule] = [
    Rule("linear", lambda m: isinstance(m, nn.Linear), modules.linear_forward),
    Rule("rms_norm", lambda m: type(m).__name__.endswith("RMSNorm") and hasattr(m, "variance_epsilon")
         and isinstance(getattr(m, "weight", None), nn.Parameter), modules.rms_norm_forward),
    Rule("swiglu", lambda m: all(isinstance(getattr(m, a, None), nn.Linear) for a in ("gate_proj", "up_proj",
                                                                                       "down_proj")) and _silu(m),
         modules.mlp_forward),
    Rule("moe_dispatch", lambda m: isinstance(getattr(m, "gate_up_proj", None), nn.Parameter)
         and m.gate_up_proj.dim() == 3 and _silu(m) and not getattr(m, "has_bias", False),
         modules.experts_forward),
    Rule("moe_router", lambda m: hasattr(m, "top_k") and hasattr(m, "norm_topk_prob")
         and hasattr(m, "e_score_correction_bias") and hasattr(m, "num_group"), modules.sigmoid_router_forward),
    Rule("moe_router", lambda m: hasattr(m, "top_k") and hasattr(m, "norm_topk_prob") and hasattr(m, "hidden_dim")
         and not hasattr(m, "e_score_correction_bias") and isinstance(getattr(m, "weight", None), nn.Parameter),
         modules.softmax_router_forward),
]


def _causal_lm_forward(self: nn.Module, input_ids: torch.Tensor | None = None, attention_mask: Any = None,
                       position_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                       shift_labels: torch.Tensor | None = None, num_items_in_batch: Any = None,
                       **kwargs: Any) -> Any:
    if (labels is None and shift_labels is None) or kwargs.get("output_router_logits") or kwargs.get("cache"):
        return self._kernels_orig_forward(input_ids=input_ids, attention_mask=attention_mask,
                                          position_ids=position_ids, labels=labels, shift_labels=shift_labels,
                                          num_items_in_batch=num_items_in_batch, **kwargs)
    kwargs.pop("logits_to_keep", None)
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
    hidden = outputs.last_hidden_state
    if shift_labels is None:
        shift_labels = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
    reduction = "mean" if num_items_in_batch is None else "sum"
    # Target positions only, whatever the backend (the reference included): an ignored label adds no loss and no
    # gradient, and in SFT most of a packed row is prompt (the unpatched trainer's LM-head hook does the same).
    flat, targets = hidden.reshape(-1, hidden.shape[-1]), shift_labels.reshape(-1).to(hidden.device)
    keep = targets != IGNORE_INDEX
    if not bool(keep.all()):
        flat, targets = flat[keep], targets[keep]
    loss = self._kernels_dispatch("fused_linear_cross_entropy", flat, self.lm_head.weight, targets, IGNORE_INDEX,
                                  reduction)
    if num_items_in_batch is not None:
        loss = loss / num_items_in_batch
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return CausalLMOutputWithPast(loss=loss, logits=None,
                                  hidden_states=outputs.hidden_states, attentions=outputs.attentions)


_rope_originals: dict[str, tuple[Callable[..., Any], int]] = {}  # modeling module -> (HF function, patched models)


def _patch_rope(model: nn.Module, dispatch: Dispatch) -> str | None:
    name = type(model).__module__
    mod = sys.modules.get(name)
    if mod is None or not callable(getattr(mod, "apply_rotary_pos_emb", None)):
        return None
    if name in _rope_originals:
        orig, n = _rope_originals[name]
        _rope_originals[name] = (orig, n + 1)
    else:
        _rope_originals[name] = (mod.apply_rotary_pos_emb, 1)

    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):  # noqa: ANN001, ANN202 - HF signature
        return dispatch("rope", q, k, cos, sin, unsqueeze_dim)

    mod.apply_rotary_pos_emb = apply_rotary_pos_emb
    return name


def _unpatch_rope(name: str) -> None:
    orig, n = _rope_originals[name]
    if n == 1:
        sys.modules[name].apply_rotary_pos_emb = orig
        del _rope_originals[name]
    else:
        _rope_originals[name] = (orig, n - 1)


ATTENTION_NAME = "flywheel_kernels"
_ATTENTION_FROM = ("sdpa", "eager")  # the implementations our attention backends reproduce exactly


def _attention_interface(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                         sliding_window: int | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """HF attention-interface signature -> the table's ``attention`` backend (out (B, S, H, D), no weights)."""
    dispatch = getattr(module, "_kernels_dispatch", None)
    if dispatch is None or dropout or sliding_window or kwargs.get("s_aux") is not None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      sliding_window=sliding_window, **kwargs)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    return dispatch("attention", query, key, value, attention_mask, scale), None


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ATTENTION_NAME, _attention_interface)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


def _patch_attention(model: nn.Module, dispatch: Dispatch, patched: list[nn.Module]) -> str | None:
    """Switch the model to the table-routed attention; returns the implementation to restore (None: not patched)."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current not in _ATTENTION_FROM:
        return None
    sites = [m for m in model.modules() if m is not model and getattr(m, "config", None) is config
             and type(m).__name__.endswith("Attention")]
    if not sites:
        return None
    _register_attention()
    for m in sites:
        m._kernels_dispatch = dispatch
        patched.append(m)
    config._attn_implementation = ATTENTION_NAME
    return current


@dataclass
class PatchState:
    dispatch: Dispatch
    modules: list[nn.Module]
    rope_module: str | None
    counts: dict[str, int]
    attention_from: str | None = None


def _tuned_ops(table: TuningTable) -> set[str]:
    """The ops a table patches: those with a non-reference backend, and attention whenever the table has it at all.
    An op's ``reference`` is what the unpatched model runs, except for attention: there it is the eager formula
    while the unpatched model runs its configured implementation (sdpa by default), so a table on which the eager
    formula won the race (the tiny MoE in bf16 on an AMX Xeon: eager 24.5 ms against sdpa 34.8 ms per step) must
    patch it in, or the trainer would keep the slower sdpa."""
    ops = {e.op for e in table.entries if e.backend != "reference" or e.op == "attention"}
    return ops | {op for op, b in table.defaults.items() if b != "reference" or op == "attention"}


def _as_table(table: str | Path | TuningTable | dict[str, str]) -> TuningTable:
    if isinstance(table, TuningTable):
        return table
    if isinstance(table, dict):
        return TuningTable.uniform(table)
    return TuningTable.load(table)


def _device_type(model: nn.Module) -> str:
    p = next(model.parameters(), None)
    return p.device.type if p is not None else "cpu"


def apply(model: nn.Module, table: str | Path | TuningTable | dict[str, str],
          device: str | None = None, force_ops: set[str] | None = None) -> dict[str, int]:
    """Patch ``model`` in place from a tuning table (a path, a ``TuningTable``, or {op: backend}).

    Returns the number of patched sites per op. Applying twice reverts the first patch first. ``force_ops`` patches
    those ops even where the table says ``reference`` (the tuner profiles a model that way).
    """
    if getattr(model, "_kernels_state", None) is not None:
        revert(model)
    tbl = _as_table(table)
    dispatch = Dispatch(tbl, device or _device_type(model))
    ops = _tuned_ops(tbl) | set(force_ops or ())
    counts: dict[str, int] = {}
    patched: list[nn.Module] = []

    def patch(m: nn.Module, op: str, fn: Callable[..., Any]) -> None:
        m._kernels_dispatch = dispatch
        m.forward = types.MethodType(fn, m)
        patched.append(m)
        counts[op] = counts.get(op, 0) + 1

    for m in model.modules():
        if m is model:
            continue
        for rule in RULES:
            if rule.op in ops and rule.matches(m):
                patch(m, rule.op, rule.forward)
                break
    if "fused_linear_cross_entropy" in ops and isinstance(getattr(model, "lm_head", None), nn.Linear) and (
            getattr(model.lm_head, "bias", None) is None) and hasattr(model, "model"):
        model._kernels_orig_forward = model.forward
        patch(model, "fused_linear_cross_entropy", _causal_lm_forward)
    rope = _patch_rope(model, dispatch) if "rope" in ops else None
    if rope:
        counts["rope"] = 1
    n_before = len(patched)
    attention_from = _patch_attention(model, dispatch, patched) if "attention" in ops else None
    if attention_from:
        counts["attention"] = len(patched) - n_before
    model._kernels_state = PatchState(dispatch, patched, rope, counts, attention_from)
    return counts


def revert(model: nn.Module) -> None:
    """Undo ``apply``: HF's forwards (and the process-wide RoPE function) come back; no-op on an unpatched model."""
    state: PatchState | None = getattr(model, "_kernels_state", None)
    if state is None:
        return
    for m in state.modules:
        for attr in ("forward", "_kernels_dispatch", "_kernels_orig_forward"):
            if attr in m.__dict__:
                delattr(m, attr)
    if state.rope_module:
        _unpatch_rope(state.rope_module)
    if state.attention_from:
        model.config._attn_implementation = state.attention_from
    del model._kernels_state


GEMM_OPS = ("linear", "attention", "moe_dispatch", "fused_linear_cross_entropy")  # the ops that carry the GEMMs


def gemm_dtypes(table: str | Path | TuningTable | dict[str, str], device: str, dtype: str) -> set[str]:
    """The dtypes the model's GEMMs will run in under ``table`` (``dtype`` = the autocast / input dtype).

    A backend registered with ``gemm="float32"`` computes its GEMMs in fp32 whatever the autocast dtype; any other
    backend, and a GEMM op the table leaves to HF, computes them in ``dtype``. The trainer divides by the highest
    peak among these dtypes, so MFU is never flattered by a slow emulated-bf16 peak when the GEMMs ran in fp32.
    """
    from kernels import registry

    tbl = _as_table(table)
    found: set[str] = set()
    for op in GEMM_OPS:
        names = {e.backend for e in tbl.entries if e.op == op and e.device == device and e.dtype == dtype}
        names |= {tbl.defaults.get(op, registry.REFERENCE)} if not names else set()
        for name in names:
            b = registry.get(op, name)
            found.add(b.gemm if b.gemm and b.runs_on(device) else dtype)
    return found


def patched_ops(model: nn.Module) -> dict[str, int]:
    state: PatchState | None = getattr(model, "_kernels_state", None)
    return dict(state.counts) if state else {}
