"""The ``hf:PATH`` backend on a tiny random-init Llama checkpoint with a tokenizer trained here (the same HF format the
trainer writes): batched generation, per-sample reproducibility whatever the batch, greedy at T=0, and a cache that
is keyed by the checkpoint's content."""

from __future__ import annotations

from pathlib import Path

import pytest

from flywheel.config import PolicySection
from flywheel.generators.base import generate_problem
from flywheel.policies import generate_attempts

MAX_TOKENS = 12


def build_checkpoint(path: Path, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = [generate_problem("production_planning", seed=s, difficulty=1).question for s in range(8)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<pad>", "<eos>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    fast.save_pretrained(path)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id, bos_token_id=None)
    model = LlamaForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():  # explicit generator: the checkpoint is the same bytes on every run
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return build_checkpoint(tmp_path_factory.mktemp("ckpt"))


@pytest.fixture(scope="module")
def problems():
    return [generate_problem("production_planning", seed=50 + i, difficulty=1) for i in range(3)]


def _run(problems, ckpt, cache, batch, temperature=1.0):
    settings = PolicySection(concurrency=batch, max_tokens=MAX_TOKENS, template="code_only")
    return generate_attempts(problems, f"hf:{ckpt}", samples=2, temperature=temperature, api="gurobipy",
                             round_id=2, cache_dir=cache, progress=False, settings=settings)


def test_hf_generates_batched_reproducible_and_cached(problems, checkpoint, tmp_path):
    batched = _run(problems, checkpoint, tmp_path / "a", batch=4)
    assert len(batched.attempts) == 6 and not batched.infra_errors
    assert batched.requests_sent == 6
    for a in batched.attempts:
        d = batched.details[a.attempt_id]
        assert 0 < d["usage"]["completion_tokens"] <= MAX_TOKENS
        assert d["finish_reason"] in ("stop", "length")
        assert a.prompt_template == "code_only/v1" and a.sampling["temperature"] == 1.0
    texts = [a.response for a in batched.attempts]
    assert texts[0] != texts[1]  # samples 0 and 1 of a problem draw from different seeds

    # The same samples one request at a time: each sample's generator is seeded by (problem, index), not by batch.
    single = _run(problems, checkpoint, tmp_path / "b", batch=1)
    assert [a.attempt_id for a in single.attempts] == [a.attempt_id for a in batched.attempts]

    again = _run(problems, checkpoint, tmp_path / "a", batch=4)
    assert again.requests_sent == 0 and again.cache_hits == 6
    assert [a.attempt_id for a in again.attempts] == [a.attempt_id for a in batched.attempts]


def test_hf_greedy_and_checkpoint_identity(problems, tmp_path):
    ckpt = build_checkpoint(tmp_path / "ckpt", seed=1)
    greedy = _run(problems[:1], ckpt, tmp_path / "c", batch=2, temperature=0.0)
    assert greedy.attempts[0].response == greedy.attempts[1].response  # T=0 is argmax: both samples agree
    build_checkpoint(ckpt, seed=2)  # "retrained" into the same directory
    retrained = _run(problems[:1], ckpt, tmp_path / "c", batch=2, temperature=0.0)
    assert retrained.cache_hits == 0 and retrained.requests_sent == 2  # new weights never reuse old replies
