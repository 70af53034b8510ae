"""Tiny pretrained-style checkpoints for the importer and fine-tuning tests (not a test module).

``write_tiny_llama`` saves a 2-layer Llama with a BPE tokenizer trained here (ChatML template) as an HF folder;
``write_tiny_gguf`` writes the same kind of model as a Q8_0 GGUF with the ``gguf`` package, laid out as llama.cpp's
converter does (q/k rows permuted for its RoPE, GPT-2 style tokenizer metadata), so transformers' GGUF loader reads it
back as it reads SmolLM2's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from training.tokenizer import BOS, train_tokenizer

TEXTS = ["def f(x):\n    return x + 1\n", "maximize profit subject to capacity 12 and 250 units of Steel",
         "```python\nimport pulp\nm = pulp.LpProblem('p', pulp.LpMaximize)\n```"]


def tiny_llama(seed: int = 0, vocab: int = 320) -> tuple[LlamaForCausalLM, Any]:
    tok = train_tokenizer(TEXTS * 20, vocab)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      tie_word_embeddings=False, bos_token_id=tok.convert_tokens_to_ids(BOS),
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    return model, tok


def write_tiny_llama(path: Path, seed: int = 0) -> Path:
    model, tok = tiny_llama(seed)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """HF q/k rows -> GGUF's interleaved RoPE layout (the inverse of transformers' reverse_permute on load)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(path: Path, seed: int = 0) -> tuple[Path, LlamaForCausalLM, Any]:
    import gguf

    model, tok = tiny_llama(seed)
    cfg = model.config
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(len(tok))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    data = json.loads(tok.backend_tokenizer.to_str())
    added = {t["content"]: t["id"] for t in data["added_tokens"]}
    tokens: list[str] = [""] * len(tok)
    for text, i in [*data["model"]["vocab"].items(), *added.items()]:
        tokens[i] = text
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in added else 1 for t in tokens])  # 3 = control (special) token
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]])
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    w.add_pad_token_id(cfg.pad_token_id)
    w.add_chat_template(tok.chat_template)

    def add(name: str, arr: np.ndarray) -> None:
        if arr.ndim == 2:
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(arr, q8), raw_dtype=q8)
        else:
            w.add_tensor(name, arr)

    add("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        add(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        add(f"blk.{i}.attn_q.weight", _permute(sd[p + "self_attn.q_proj.weight"], cfg.num_attention_heads))
        add(f"blk.{i}.attn_k.weight", _permute(sd[p + "self_attn.k_proj.weight"], cfg.num_key_value_heads))
        add(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        add(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        add(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        add(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        add(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        add(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    add("output_norm.weight", sd["model.norm.weight"])
    add("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, model, tok
