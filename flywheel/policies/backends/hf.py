"""``hf:PATH``: a local Hugging Face checkpoint (the trainer's output format) with transformers generation.

Requests run ``settings.concurrency`` rows at a time (left padding), in a worker thread so the event loop stays free,
through ``decode.stream``: a row leaves the batch when it ends (end of sequence, its code block closed, a loop) and
the next waiting prompt takes its slot, so one looping completion no longer holds 31 finished ones; each result is
handed on (and cached) as its row ends. The dtype (``settings.hf_dtype``) is fp32 by
default: bf16 decodes 2.4x faster on an AVX-512 BF16 CPU but a fine-tuned SmolLM2's greedy output in bf16 looped to
the token limit on 5 of 8 held-out problems against 2 in fp32. ``auto`` takes bf16 where this device measurably runs
bf16 GEMMs faster (``training.precision.probe_dtype``), for sampling where speed matters more than fidelity. The
dtype is part of the identity (cache fingerprint) and of the sampling record, since greedy text differs between them.
Sampling uses the Gumbel-max trick inside a logits processor with one ``torch.Generator`` per request, seeded
from (problem, sample index): argmax(logits / T + Gumbel noise) is an exact draw from softmax(logits / T), and each
sample is reproducible whatever batch it lands in. Temperature 0 is greedy.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
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
        self.dtype = settings.hf_dtype if settings.hf_dtype != "auto" else _auto_dtype(self.path)
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def identity(self) -> dict[str, str]:
        return {"model": str(self.path.resolve()), "endpoint": "local", "checkpoint": self._hash,
                "dtype": self.dtype}

    @property
    def sampling_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"dtype": self.dtype, "stop_after_code": self.settings.stop_after_code}
        if self.settings.repeat_stop:  # only when on: replies cached before the setting existed stay valid
            options["repeat_stop"] = self.settings.repeat_stop
        return options

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.path)
        tok.padding_side = "left"  # decoder-only: new tokens must follow each prompt directly
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token or tok.unk_token
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForCausalLM.from_pretrained(
            self.path, dtype=torch.bfloat16 if self.dtype == "bf16" else torch.float32)
        self._model, self._tokenizer = model.to(device).eval(), tok

    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        """All requests of one sampling setting go through one continuous batch of ``concurrency`` slots; each
        result is handed on as its row ends (so the cache and progress follow completions, not batches)."""
        loop = asyncio.get_running_loop()
        groups: dict[tuple[float, float, int], list[ChatRequest]] = {}
        for r in requests:
            groups.setdefault((r.temperature, r.top_p, r.max_tokens), []).append(r)
        for group in groups.values():
            self.counters.requests_sent += len(group)
            told: set[int] = set()

            def deliver(i: int, outcome: Outcome, group: list[ChatRequest] = group, told: set[int] = told) -> None:
                told.add(i)
                loop.call_soon_threadsafe(on_result, group[i], outcome)

            try:
                await asyncio.to_thread(self._generate, group, slots=self.settings.concurrency, on_done=deliver)
            except Exception as exc:  # OOM, a broken checkpoint: infrastructure, not the model's answer
                failure = InfraFailure(kind="backend", message=f"{type(exc).__name__}: {exc}"[:300])
                for i, req in enumerate(group):
                    if i not in told:
                        on_result(req, failure)

    def _generate(self, batch: list[ChatRequest], suppress_eos: bool = False, slots: int = 0,
                  on_done: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
        """Requests of one sampling setting, ``slots`` rows at a time (0: all at once); ``suppress_eos``
        (benchmarks only) makes every row run to its token limit; ``on_done(i, outcome)`` hears each as it ends."""
        import torch

        from flywheel.policies.backends.decode import Decoded, stream

        if self._model is None:
            self._load()
        tok, model = self._tokenizer, self._model
        prompts = tok([chat_text(tok, r.messages) for r in batch], add_special_tokens=False)["input_ids"]
        first = batch[0]  # the caller groups requests by sampling setting
        if first.temperature > 0:
            gens = [torch.Generator().manual_seed(r.seed) for r in batch]

            def pick(logits_BV: Any, rows: list[int]) -> Any:
                return GumbelSampler([gens[r] for r in rows], first.temperature, first.top_p)(None, logits_BV).argmax(-1)
        else:
            def pick(logits_BV: Any, rows: list[int]) -> Any:
                return logits_BV.argmax(-1)

        outcomes: list[Outcome] = [InfraFailure(kind="backend", message="not decoded")] * len(batch)

        def done(i: int, d: Decoded) -> None:
            outcomes[i] = Completion(text=tok.decode(d.tokens, skip_special_tokens=True), finish_reason=d.finish_reason,
                                     usage={"prompt_tokens": len(prompts[i]), "completion_tokens": len(d.tokens)},
                                     latency_s=d.wall_s)
            if on_done is not None:
                on_done(i, outcomes[i])

        stop = self.settings.stop_after_code and not suppress_eos
        stream(model, prompts, slots=slots or len(batch), max_new=first.max_tokens,
               eos=None if suppress_eos else tok.eos_token_id, pick=pick,
               text_of=(lambda ids: tok.decode(ids, skip_special_tokens=True)) if stop else None,
               repeat_stop=0 if suppress_eos else self.settings.repeat_stop, pad_id=tok.pad_token_id or 0,
               on_done=done)
        return outcomes

    async def aclose(self) -> None:
        self._model = self._tokenizer = None


_DTYPES: dict[str, str] = {}


def _auto_dtype(path: Path) -> str:
    """bf16 where a bf16 GEMM of the model's own MLP shape runs clearly faster than fp32 here (measured once per
    process and model shape), else fp32. On CUDA: bf16 where supported."""
    import json

    import torch

    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    cfg = json.loads((path / "config.json").read_text())
    hidden, ffn = int(cfg.get("hidden_size", 512)), int(cfg.get("intermediate_size", 4 * cfg.get("hidden_size", 512)))
    key = f"{hidden}x{ffn}"
    if key not in _DTYPES:
        from training.precision import probe_dtype

        _DTYPES[key] = probe_dtype(hidden, ffn, 64)["chosen"]
    return _DTYPES[key]
