"""LoRA through peft: wrap a model's linear layers, and the merged weights as a plain HF state dict.

``merged_state_dict`` computes W + scale * B @ A from each adapted layer without touching the live model (peft's
``merge_adapter``/``unmerge_adapter`` would round the base weights in fp32 on every save and make a resumed run drift
from an uninterrupted one); keys are the base model's own names, so the result saves as an ordinary checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from solvers.errors import ConfigError


def apply_lora(model: Any, cfg: Any, ckpt: Path | None = None) -> Any:
    """``model`` with trainable LoRA adapters on ``cfg.targets`` (``ckpt/adapter`` loaded when resuming)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if ckpt is not None:
        if not (ckpt / "adapter").is_dir():
            raise ConfigError("LoRA resume needs the checkpoint's adapter/ folder", culprit=str(ckpt))
        return PeftModel.from_pretrained(model, str(ckpt / "adapter"), is_trainable=True)
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    targets = [t for t in cfg.targets if t in names]
    if not targets:
        raise ConfigError(f"no linear module named {list(cfg.targets)} in this model (it has {sorted(names)})",
                          culprit="lora.targets")
    config = LoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=targets,
                        bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


@torch.no_grad()
def merged_state_dict(peft_model: Any) -> dict[str, torch.Tensor]:
    """The base model's state dict with every LoRA delta added in (names as in a plain checkpoint), on CPU."""
    from peft.tuners.lora import LoraLayer

    base = peft_model.get_base_model()
    merged: dict[str, torch.Tensor] = {}
    deltas: dict[str, torch.Tensor] = {}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            delta = sum(module.get_delta_weight(a) for a in module.active_adapters if a in module.lora_A)
            deltas[f"{name}.weight"] = delta
    for key, value in base.state_dict().items():
        if "lora_" in key:
            continue
        plain = key.replace(".base_layer.", ".")
        tensor = value.detach()
        if plain in deltas:
            tensor = tensor + deltas[plain].to(tensor.dtype)
        merged[plain] = tensor.cpu().clone()
    return merged
