"""``flywheel train --init DIR``: full and LoRA fine-tuning of a pretrained-style checkpoint (a tiny Llama saved
here), the checkpoint's own chat template for the loss mask, the dtype probe, TensorBoard events and model cards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tiny_models import write_tiny_llama
from transformers import AutoModelForCausalLM

from flywheel.curation.synthetic import write_problem_shards
from training.card import read_card, record_eval
from training.config import load_recipe
from training.data import chat_spans
from training.trainer import Trainer

SMOL_TEMPLATE = (  # SmolLM2's template shape: a default system turn when the conversation has none
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are helpful.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("init")
    _, sft = write_problem_shards(base / "shards", n_train=24, n_val=6, seed=5)
    return {"sft": sft, "init": write_tiny_llama(base / "tiny-llama")}


def _trainer(setup, out: Path, lr: float = 3e-3, **lora) -> Trainer:
    over = {"model.path": str(setup["init"]), "data.sources": [{"path": str(setup["sft"]), "name": "sft"}],
            "train.steps": 6, "train.batch_rows": 4, "train.micro_batch": 4, "train.warmup_steps": 1,
            "train.eval_every": 0, "train.lr": lr, "data.seq_len": 512, "data.val_rows": 4}
    over.update({f"lora.{k}": v for k, v in lora.items()})
    return Trainer(load_recipe("sft", over), out, quiet=True)


def test_foreign_chat_template_masks_assistant_only() -> None:
    from tiny_models import tiny_llama

    _, tok = tiny_llama()
    tok.chat_template = SMOL_TEMPLATE
    messages = [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A1"},
                {"role": "user", "content": "again"}, {"role": "assistant", "content": "A2"}]
    text, spans = chat_spans(messages, tok)
    assert text.startswith("<|im_start|>system\nYou are helpful.")
    assert [text[a:b] for a, b in spans] == ["A1<|im_end|>", "A2<|im_end|>"]


@pytest.mark.parametrize("r", [0, 8])
def test_finetune_from_checkpoint(setup, tmp_path: Path, r: int) -> None:
    # LoRA trains few parameters from a zero B: it needs the larger learning rate LoRA recipes use.
    trainer = _trainer(setup, tmp_path / f"run-{r}", lr=1e-2 if r else 3e-3, r=r, alpha=16.0)
    before = trainer.evaluate()["val_loss/sft"]
    history = trainer.train()
    path = trainer.finish()
    after = trainer.evaluate()["val_loss/sft"]
    # 6 steps on 24 templated answers: held-out answer loss drops by well over step noise (~0.05); LoRA (r=8, two
    # tiny layers) moves it ~0.2 in 6 steps on the 8-phrasing questions, full fine-tuning more.
    assert after < before - (0.15 if r else 0.3), (before, after)
    assert trainer.dtype in ("fp32", "bf16") and trainer.dtype_probe["fp32_gflops"] > 0
    assert history[0]["dtype_probe"]["chosen"] == trainer.dtype
    merged = AutoModelForCausalLM.from_pretrained(path).eval()
    ids = torch.tensor([[3, 17, 40, 41, 99, 120, 7]])
    with torch.no_grad():
        got = merged(ids).logits
        if r:
            from peft import PeftModel

            assert (path / "adapter" / "adapter_config.json").is_file()
            base = AutoModelForCausalLM.from_pretrained(setup["init"])
            want = PeftModel.from_pretrained(base, str(path / "adapter")).eval()(ids).logits
            # Merged W + BA vs base + adapter: the same sums in another order; fp32 rounding over 2 layers of width
            # 64 stays below 1e-4 of logits of size ~1.
            assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max()
            assert trainer.dtype_probe and 0 < _trainable(trainer) < 0.5 * _total(trainer)
        else:
            want = trainer.model.eval()(ids).logits
            assert torch.allclose(got, want, atol=1e-6)  # a save/load round trip of fp32 weights: exact up to 1e-6
    # TensorBoard: the scalars of every step, read back with tensorboard's own reader.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / f"run-{r}" / "tensorboard"))
    acc.Reload()
    assert {"loss", "lr", "tokens_per_s", "val_loss/sft"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("loss")] == list(range(1, 7))
    assert acc.Scalars("loss")[-1].value == pytest.approx(history[-1]["loss"], rel=1e-6)
    # The model card: lineage back to the base checkpoint, the shard and its manifest, recipe and metrics.
    fw = read_card(path)["flywheel"]
    assert fw["base"]["path"] == str(setup["init"].resolve())
    assert fw["data"][0]["path"] == str(setup["sft"]) and fw["data"][0]["manifest"]
    assert fw["recipe"]["kind"] == "sft" and (fw["recipe"].get("lora", {}).get("r") == r if r else True)
    assert fw["metrics"]["step"] == 6
    record_eval(path, {"benchmark": "held-out", "items": 3, "pass_at_1_strict": 0.5, "settings": "greedy"})
    record_eval(path, {"benchmark": "held-out", "items": 3, "pass_at_1_strict": 0.75, "settings": "greedy"})
    evals = read_card(path)["flywheel"]["eval"]
    assert len(evals) == 1 and evals[0]["pass_at_1_strict"] == 0.75  # the same evaluation replaces its entry
    assert "| held-out | 3 | 0.75 |" in (path / "README.md").read_text()
    trainer.balancer.remove()


def _trainable(t: Trainer) -> int:
    return sum(p.numel() for p in t.model.parameters() if p.requires_grad)


def _total(t: Trainer) -> int:
    return sum(p.numel() for p in t.model.parameters())


@pytest.mark.parametrize("r", [0, 8])
def test_partial_finetuning_freezes_the_bottom(setup, tmp_path: Path, r: int) -> None:
    """``train.freeze_layers`` / ``freeze_embeddings``: the frozen weights stay bit-identical through training, get no
    gradient and no optimizer state, and nothing below the first trainable layer takes part in the backward."""
    over = {"model.path": str(setup["init"]), "data.sources": [{"path": str(setup["sft"]), "name": "sft"}],
            "train.steps": 2, "train.batch_rows": 4, "train.micro_batch": 4, "train.warmup_steps": 1,
            "train.eval_every": 0, "data.seq_len": 512, "data.val_rows": 4, "train.freeze_layers": 1,
            "train.freeze_embeddings": True, "lora.r": r}
    trainer = Trainer(load_recipe("sft", over), tmp_path / "run", quiet=True)
    named = dict(trainer.model.named_parameters())
    frozen = {n for n, p in named.items() if not p.requires_grad}
    assert any("embed_tokens" in n for n in frozen) and any(".layers.0." in n for n in frozen)
    # layer 1 keeps training (under LoRA: its adapters; peft freezes every base weight itself)
    assert not any(".layers.1." in n and ("lora_" in n or r == 0) for n in frozen)
    if r:
        assert any(".layers.0." in n and "lora_" in n for n in frozen)
    before = {n: p.detach().clone() for n, p in named.items()}
    needs_grad: dict[int, bool] = {}
    layers = trainer.model.get_base_model().model.layers if r else trainer.model.model.layers
    hooks = [layer.register_forward_hook(lambda _m, _a, out, i=i: needs_grad.__setitem__(
        i, (out[0] if isinstance(out, tuple) else out).requires_grad)) for i, layer in enumerate(layers)]
    trainer.train_step()
    for h in hooks:
        h.remove()
    assert needs_grad == {0: False, 1: True}  # layer 0's output carries no graph: its backward is never computed
    assert all(named[n].grad is None for n in frozen)
    state = {id(p) for g in trainer.optimizer.param_groups for p in g["params"]}
    assert not any(id(named[n]) in state for n in frozen)
    trainer.train()
    changed = {n for n, p in named.items() if not torch.equal(p.detach(), before[n])}
    assert changed and not changed & frozen
    path = trainer.finish()
    info = json.loads((tmp_path / "run" / "config.json").read_text())
    assert info["trainable_params"] == sum(p.numel() for n, p in named.items() if n not in frozen)
    assert (path / "model.safetensors").is_file()


def test_freezing_more_layers_than_the_model_has_names_the_field(setup, tmp_path: Path) -> None:
    from solvers.errors import ConfigError

    over = {"model.path": str(setup["init"]), "data.sources": [{"path": str(setup["sft"]), "name": "sft"}],
            "data.seq_len": 512, "data.val_rows": 4, "train.batch_rows": 4, "train.micro_batch": 4,
            "train.freeze_layers": 3}
    with pytest.raises(ConfigError, match="freeze_layers 3 exceeds the model's 2 decoder layers") as err:
        Trainer(load_recipe("sft", over), tmp_path / "run", quiet=True)
    assert err.value.culprit == "train.freeze_layers"


def test_compiled_decoder_trains_like_eager_and_saves_plain_names(setup, tmp_path: Path) -> None:
    """``train.compile``: the decoder layers run through torch.compile (dynamic sequence length: each step's trimmed
    length differs), the losses follow the eager run's, validation runs eager, and the checkpoint's parameter names
    carry no ``_orig_mod`` prefix, so ``from_pretrained`` loads it as any other."""
    over = {"model.path": str(setup["init"]), "data.sources": [{"path": str(setup["sft"]), "name": "sft"}],
            "train.steps": 3, "train.batch_rows": 4, "train.micro_batch": 4, "train.warmup_steps": 1,
            "train.eval_every": 0, "data.seq_len": 512, "data.val_rows": 4, "train.dtype": "fp32"}
    runs = {}
    for compiled in (False, True):
        trainer = Trainer(load_recipe("sft", {**over, "train.compile": compiled}), tmp_path / f"c{compiled}",
                          quiet=True)
        assert all((getattr(layer, "_compiled_call_impl", None) is not None) == compiled
                   for layer in trainer.model.model.layers)
        history = trainer.train()
        runs[compiled] = ([h["loss"] for h in history], trainer.evaluate()["val_loss/sft"], trainer.finish())
        trainer.balancer.remove()
    (eager, val_e, _), (comp, val_c, path) = runs[False], runs[True]
    # fp32 on the same rows: inductor fuses and reorders sums, so the losses agree to float noise that grows over
    # three AdamW steps at lr 3e-3; 1e-3 relative is ~100x that noise and far below a step's change (~5-30%).
    assert comp == pytest.approx(eager, rel=1e-3) and val_c == pytest.approx(val_e, rel=1e-3)
    names = set(AutoModelForCausalLM.from_pretrained(path).state_dict())
    assert not any("_orig_mod" in n for n in names) and "model.layers.0.self_attn.q_proj.weight" in names


def test_compile_without_a_cpp_compiler_names_the_field(setup, tmp_path: Path, monkeypatch) -> None:
    from solvers.errors import ConfigError

    monkeypatch.setenv("PATH", str(tmp_path))  # no g++ / clang++ here
    monkeypatch.delenv("CXX", raising=False)
    over = {"model.path": str(setup["init"]), "data.sources": [{"path": str(setup["sft"]), "name": "sft"}],
            "data.seq_len": 512, "data.val_rows": 4, "train.batch_rows": 4, "train.micro_batch": 4,
            "train.compile": True}
    with pytest.raises(ConfigError, match="C\\+\\+ compiler") as err:
        Trainer(load_recipe("sft", over), tmp_path / "run", quiet=True)
    assert err.value.culprit == "train.compile"
