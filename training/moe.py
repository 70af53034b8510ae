"""MoE load balancing done by the trainer: the auxiliary loss, DeepSeek-V3's aux-loss-free bias update, load stats.

Routers are found by shape, not by model class: any module named ``*.gate`` whose forward returns
``(router_logits, top_k_weights, top_k_indices)`` (transformers' Qwen3-MoE ``TopKRouter`` and DeepSeek-V3
``TopkRouter``). A forward hook records, per router, the tokens each expert received and the mean routing
probability, which gives

* the auxiliary loss (Switch Transformer / Qwen3-MoE form): ``E * sum_i f_i * P_i`` with f_i the share of routed
  slots that went to expert i and P_i the mean router probability of i (softmax for Qwen3-MoE; for DeepSeek-V3's
  sigmoid router the scores normalised per token, as in its sequence-wise balance loss). Minimal (= 1) when uniform.
* the aux-loss-free update (DeepSeek-V3, section 2.1.2): after each step, every router that has an
  ``e_score_correction_bias`` moves it by ``rate * sign(mean_load - load_i)``, so overloaded experts become less
  likely to be chosen. transformers keeps the bias as a buffer and never updates it: the trainer must.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn


def _is_router(name: str, module: nn.Module) -> bool:
    return name.endswith(".gate") and hasattr(module, "top_k") and hasattr(module, "weight") and (
        hasattr(module, "num_experts"))


@dataclass
class RouterStats:
    """Per-router accumulators over one optimizer step (cleared by ``MoEBalancer.end_step``)."""

    load: torch.Tensor  # tokens routed to each expert (float, summed over micro-batches)
    aux_terms: list[torch.Tensor] = field(default_factory=list)


class MoEBalancer:
    """Hooks the routers of ``model``; ``aux_loss()`` after a forward, ``end_step()`` after the optimizer step."""

    def __init__(self, model: nn.Module, aux_coef: float, bias_rate: float) -> None:
        self.aux_coef = aux_coef
        self.bias_rate = bias_rate
        self.routers: dict[str, nn.Module] = {n: m for n, m in model.named_modules() if _is_router(n, m)}
        self.stats: dict[str, RouterStats] = {}
        # False while activation checkpointing recomputes forwards during backward: those must not count twice.
        self.recording = True
        self._handles = [m.register_forward_hook(self._hook(n)) for n, m in self.routers.items()]

    @property
    def active(self) -> bool:
        return bool(self.routers)

    def _hook(self, name: str):  # noqa: ANN202 - torch hook signature
        def hook(module: nn.Module, args: tuple, output: tuple) -> None:
            logits, _, indices = output[0], output[1], output[2]
            n_experts = int(module.num_experts)
            with torch.no_grad():
                load = torch.bincount(indices.reshape(-1), minlength=n_experts).float()
            aux = None
            if self.aux_coef > 0 and torch.is_grad_enabled():
                # Computed during checkpoint recomputation too (then discarded): non-reentrant checkpointing
                # requires the recomputed forward to save exactly the tensors the original forward saved.
                logits = logits.float()
                if hasattr(module, "e_score_correction_bias"):
                    scores = logits.sigmoid()
                    probs = scores / scores.sum(-1, keepdim=True)
                else:
                    probs = logits.softmax(-1)
                frac = load.to(probs.device) / load.sum().clamp_min(1)
                aux = n_experts * (frac * probs.mean(0)).sum()
            if not self.recording:
                return
            stats = self.stats.setdefault(name, RouterStats(torch.zeros(n_experts)))
            stats.load += load.cpu()
            if aux is not None:
                stats.aux_terms.append(aux)
        return hook

    def aux_loss(self) -> torch.Tensor | None:
        """The mean aux term of the forwards since the last call (consumed), times the coefficient."""
        terms = [t for s in self.stats.values() for t in s.aux_terms]
        for s in self.stats.values():
            s.aux_terms = []
        if not terms or self.aux_coef == 0:
            return None
        return self.aux_coef * torch.stack(terms).mean()

    def end_step(self, world: bool) -> dict[str, list[float]]:
        """All-reduce the step's loads, apply the bias update, return per-router expert load shares; then reset."""
        loads: dict[str, list[float]] = {}
        for name, module in self.routers.items():
            stats = self.stats.get(name)
            if stats is None:
                continue
            load = stats.load
            if world and dist.is_initialized():
                # nccl / hccl reduce device tensors only; gloo takes CPU ones. The router weight says where we run.
                on_device = load.to(module.weight.device)
                dist.all_reduce(on_device)
                load = on_device.cpu()
            bias = getattr(module, "e_score_correction_bias", None)
            if bias is not None and self.bias_rate > 0:
                with torch.no_grad():
                    delta = self.bias_rate * torch.sign(load.mean() - load)
                    bias.add_(delta.to(bias.device, bias.dtype))
            loads[name] = (load / load.sum().clamp_min(1)).tolist()
        self.stats = {}
        return loads

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def load_summary(loads: dict[str, list[float]]) -> dict[str, float]:
    """max/min expert share over all routers, for the per-step log (1/E each when perfectly balanced)."""
    if not loads:
        return {}
    shares = [x for v in loads.values() for x in v]
    return {"expert_load_max": max(shares), "expert_load_min": min(shares)}
