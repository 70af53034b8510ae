"""Model construction: tiny configs for CPU (a registry of transformers config builders) or a local HF checkpoint.

The tiny configs are sized for the end-to-end demo (issue 9): rotary positions (all four families use RoPE), a
small vocabulary with per-digit tokens, 2 layers at hidden 64, so that thousands of small optimizer steps fit in CPU
minutes. ``max_position_embeddings`` only bounds the RoPE cache; packed rows reset positions at every document.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    DeepseekV3Config,
    LlamaConfig,
    PretrainedConfig,
    PreTrainedModel,
    Qwen3Config,
    Qwen3MoeConfig,
)

from solvers.errors import ConfigError, unknown_name

TINY_CONFIGS: dict[str, Callable[[int, dict[str, Any]], PretrainedConfig]] = {}


def tiny(name: str) -> Callable[[Callable[[int, dict[str, Any]], PretrainedConfig]], Callable[..., PretrainedConfig]]:
    def deco(fn: Callable[[int, dict[str, Any]], PretrainedConfig]) -> Callable[..., PretrainedConfig]:
        TINY_CONFIGS[name] = fn
        return fn
    return deco


_COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=4096,
               rope_theta=10000.0, tie_word_embeddings=False, attention_dropout=0.0)


@tiny("qwen3_moe_tiny")
def _qwen3_moe(vocab: int, over: dict[str, Any]) -> PretrainedConfig:
    return Qwen3MoeConfig(**{**_COMMON, "vocab_size": vocab, "num_key_value_heads": 2, "head_dim": 16,
                             "intermediate_size": 128, "moe_intermediate_size": 64, "num_experts": 4,
                             "num_experts_per_tok": 2, "norm_topk_prob": True, "decoder_sparse_step": 1,
                             "router_aux_loss_coef": 0.0, **over})


@tiny("qwen3_moe_demo")
def _qwen3_moe_demo(vocab: int, over: dict[str, Any]) -> PretrainedConfig:
    # The end-to-end demo's size (issue 9): still minutes on 2 cores, but 4 layers give the attention depth that
    # copying a number from the question into the code needs (find the digit, then the next one), and head_dim 32
    # leaves RoPE enough frequencies to address positions precisely.
    return Qwen3MoeConfig(**{**_COMMON, "vocab_size": vocab, "hidden_size": 128, "num_hidden_layers": 4,
                             "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 256,
                             "moe_intermediate_size": 128, "num_experts": 8, "num_experts_per_tok": 2,
                             "norm_topk_prob": True, "decoder_sparse_step": 1, "router_aux_loss_coef": 0.0, **over})


@tiny("deepseek_v3_tiny")
def _deepseek_v3(vocab: int, over: dict[str, Any]) -> PretrainedConfig:
    # MLA with small ranks; first layer dense (first_k_dense_replace), second MoE with one shared expert and a
    # sigmoid router whose e_score_correction_bias the trainer updates (aux-loss-free balancing).
    return DeepseekV3Config(**{**_COMMON, "vocab_size": vocab, "num_key_value_heads": 4, "intermediate_size": 128,
                               "moe_intermediate_size": 32, "n_routed_experts": 4, "n_shared_experts": 1,
                               "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1,
                               "q_lora_rank": None, "kv_lora_rank": 32, "qk_rope_head_dim": 8,
                               "qk_nope_head_dim": 8, "v_head_dim": 16, "routed_scaling_factor": 1.0,
                               "norm_topk_prob": True, "rope_scaling": None, **over})


@tiny("qwen3_tiny")
def _qwen3(vocab: int, over: dict[str, Any]) -> PretrainedConfig:
    return Qwen3Config(**{**_COMMON, "vocab_size": vocab, "num_key_value_heads": 2, "head_dim": 16,
                          "intermediate_size": 192, **over})


@tiny("llama_tiny")
def _llama(vocab: int, over: dict[str, Any]) -> PretrainedConfig:
    return LlamaConfig(**{**_COMMON, "vocab_size": vocab, "num_key_value_heads": 2, "intermediate_size": 192, **over})


def build_config(arch: str, vocab_size: int, overrides: dict[str, Any] | None = None) -> PretrainedConfig:
    if arch not in TINY_CONFIGS:
        raise unknown_name("model arch", arch, list(TINY_CONFIGS))
    return TINY_CONFIGS[arch](vocab_size, dict(overrides or {}))


def build_model(arch: str, path: str, vocab_size: int, overrides: dict[str, Any], seed: int,
                special_ids: dict[str, int | None] | None = None) -> PreTrainedModel:
    """A model from a local HF checkpoint (``path``) or a random init of a tiny config, seeded.

    Random init draws from torch's global generator, which transformers uses internally; ``fork_rng`` confines
    the seeding to this call so no caller's random state is touched.
    """
    if path:
        if not Path(path).is_dir():
            raise ConfigError("model checkpoint directory not found", culprit=path)
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    config = build_config(arch, vocab_size, overrides)
    for key, value in (special_ids or {}).items():
        setattr(config, key, value)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model


def enable_activation_checkpointing(model: PreTrainedModel) -> None:
    """Non-reentrant activation checkpointing per decoder layer (the method was renamed in transformers 5.x)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def decoder_layers(model: torch.nn.Module, culprit: str = "train.freeze_layers") -> torch.nn.ModuleList:
    """The decoder's stack of layers (``model.model.layers`` in Llama/Qwen/DeepSeek; found through a peft wrap)."""
    stacks = [m for n, m in model.named_modules() if n.endswith("layers") and isinstance(m, torch.nn.ModuleList)]
    if not stacks:
        raise ConfigError(f"{type(model).__name__} has no decoder layer stack", culprit=culprit)
    return max(stacks, key=len)


def compile_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """``torch.compile`` every decoder layer in place (``Module.compile``: parameter names and ``save_pretrained`` are
    unchanged) with a dynamic sequence length, since ``trim_tail`` gives every step its own length. The layers share
    one compiled graph (dynamo treats a module's parameters as graph inputs), so 30 layers compile once: ~25 s on two
    CPU cores, where compiling the whole decoder stack as one graph took ~200 s for the same step time. Embeddings,
    final norm, LM head and loss stay eager (the trainer's target-position hook runs there)."""
    stack = decoder_layers(model, "train.compile")
    for layer in stack:
        layer.compile(dynamic=True)
    return stack


def freeze_bottom(model: torch.nn.Module, layers: int, embeddings: bool) -> None:
    """Partial fine-tuning: stop the gradients of the input embeddings (and an LM head tied to them) and of the lowest
    ``layers`` decoder layers. With the embeddings frozen, autograd computes no backward at all below the first
    trainable layer (no input reaches it requiring a gradient), so the saving is those layers' whole backward (about
    two thirds of their compute) and their optimizer state."""
    modules: list[torch.nn.Module] = [model.get_input_embeddings()] if embeddings else []
    if layers:
        stack = decoder_layers(model)
        if layers > len(stack):
            raise ConfigError(f"freeze_layers {layers} exceeds the model's {len(stack)} decoder layers",
                              culprit="train.freeze_layers")
        modules += list(stack[:layers])
    for module in modules:
        module.requires_grad_(False)
