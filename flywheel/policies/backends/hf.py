"""``hf:PATH``: a local Hugging Face checkpoint (the trainer's output format) with transformers generation.

Requests run in batches of ``settings.concurrency`` prompts (left padding), in a worker thread so the event loop
stays free. Sampling uses the Gumbel-max trick inside a logits processor with one ``torch.Generator`` per request,
seeded from (problem, sample index): argmax(logits / T + Gumbel noise) is an exact draw from softmax(logits / T),
and each sample is reproducible whatever batch it lands in. Temperature 0 is greedy.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flywheel.config import PolicySection
from flywheel.policies.backends.base import (
    Backend,
    ChatRequest,
    Completion,
    InfraFailure,
    OnResult,
    Outcome,
    register_backend,
)
from flywheel.policies.spec import PolicySpec
from solvers.errors import ModelError

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt", ".jinja")


def checkpoint_hash(path: Path) -> str:
    """sha256 over the checkpoint's weight, config and tokenizer files (names and bytes): retraining into the same
    directory changes the cache fingerprint, so stale replies are never reused."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES):
        h.update(str(f.relative_to(path)).encode())
        with f.open("rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def chat_text(tokenizer: Any, messages: Sequence[dict[str, str]]) -> str:
    """The prompt string: the tokenizer's chat template when it has one, else a plain role-tagged transcript (the
    format a template-less checkpoint of ours is trained on: see the trainer's SFT formatting)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"


class GumbelSampler:
    """Logits processor: temperature, optional nucleus filter, then per-row Gumbel noise (argmax = a sample)."""

    def __init__(self, generators: list[Any], temperature: float, top_p: float) -> None:
        self.generators, self.temperature, self.top_p = generators, temperature, top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        logits_BV = scores.float() / self.temperature
        if self.top_p < 1.0:
            sorted_BV, order_BV = torch.sort(logits_BV, descending=True, dim=-1)
            cum_BV = torch.softmax(sorted_BV, dim=-1).cumsum(dim=-1)
            drop_BV = cum_BV - torch.softmax(sorted_BV, dim=-1) > self.top_p  # keep the token that crosses top_p
            logits_BV = logits_BV.scatter(-1, order_BV, sorted_BV.masked_fill(drop_BV, float("-inf")))
        noise = [torch.rand(logits_BV.shape[-1], generator=g, device="cpu") for g in self.generators]
        u_BV = torch.stack(noise).to(logits_BV.device).clamp_(1e-20, 1.0)
        return logits_BV - torch.log(-torch.log(u_BV))


@register_backend
class HFBackend(Backend):
    scheme = "hf"

    def __init__(self, spec: PolicySpec, settings: PolicySection) -> None:
        super().__init__(spec, settings)
        self.path = Path(spec.model).expanduser()
        if not (self.path / "config.json").is_file():
            raise ModelError("not a Hugging Face checkpoint (no config.json)", culprit=str(self.path))
        self._hash = checkpoint_hash(self.path)
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def identity(self) -> dict[str, str]:
        return {"model": str(self.path.resolve()), "endpoint": "local", "checkpoint": self._hash}

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.path)
        tok.padding_side = "left"  # decoder-only: new tokens must follow each prompt directly
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token or tok.unk_token
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForCausalLM.from_pretrained(self.path, dtype=torch.float32 if device == "cpu" else "auto")
        self._model, self._tokenizer = model.to(device).eval(), tok

    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        size = self.settings.concurrency
        for start in range(0, len(requests), size):
            batch = list(requests[start:start + size])
            self.counters.requests_sent += len(batch)
            try:
                outcomes = await asyncio.to_thread(self._generate, batch)
            except Exception as exc:  # OOM, a broken checkpoint: infrastructure, not the model's answer
                outcomes = [InfraFailure(kind="backend", message=f"{type(exc).__name__}: {exc}"[:300])] * len(batch)
            for req, out in zip(batch, outcomes, strict=True):
                on_result(req, out)

    def _generate(self, batch: list[ChatRequest]) -> list[Outcome]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        if self._model is None:
            self._load()
        tok, model = self._tokenizer, self._model
        t0 = time.perf_counter()
        enc = tok([chat_text(tok, r.messages) for r in batch], return_tensors="pt", padding=True,
                  add_special_tokens=False).to(model.device)
        # One generate call per (temperature, top_p, max_tokens) group would be needed if they differed; a round
        # uses one setting, so the batch's first request speaks for all.
        first = batch[0]
        processors = LogitsProcessorList()
        if first.temperature > 0:
            gens = [torch.Generator().manual_seed(r.seed) for r in batch]
            processors.append(GumbelSampler(gens, first.temperature, first.top_p))
        eos = tok.eos_token_id
        config = GenerationConfig(max_new_tokens=first.max_tokens, do_sample=False, num_beams=1,
                                  pad_token_id=tok.pad_token_id, eos_token_id=eos)
        with torch.no_grad():
            out = model.generate(**enc, generation_config=config, logits_processor=processors)
        new_BT = out[:, enc["input_ids"].shape[1]:]
        latency = (time.perf_counter() - t0) / len(batch)
        results: list[Outcome] = []
        for row in new_BT.tolist():
            stopped = eos is not None and eos in row
            tokens = row[: row.index(eos)] if stopped else row
            results.append(Completion(
                text=tok.decode(tokens, skip_special_tokens=True), finish_reason="stop" if stopped else "length",
                usage={"prompt_tokens": int(enc["input_ids"].shape[1]), "completion_tokens": len(tokens)},
                latency_s=latency))
        return results

    async def aclose(self) -> None:
        self._model = self._tokenizer = None
