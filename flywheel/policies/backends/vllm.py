"""``vllm:PATH``: vLLM's in-process engine, when the ``vllm`` extra is installed.

Not executed here: vLLM needs a GPU, and no machine this project was developed on had one, so the generation path
below (``_generate``) has never run; only the not-installed error is tested. Prefer ``vllm serve`` + ``openai:``
(below) until it has.

Without vLLM the spec fails at once with the way out: serve the checkpoint with ``vllm serve`` and use the
``openai:`` spec, which gives the same engine behind the retrying, caching HTTP client.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Sequence
from typing import Any

from flywheel.config import PolicySection
from flywheel.policies.backends.base import Backend, ChatRequest, Completion, InfraFailure, OnResult, register_backend
from flywheel.policies.spec import PolicySpec
from solvers.errors import ModelError


def vllm_missing_message(path: str) -> str:
    return (f"the vllm: backend (not executed here: never run on a machine with vLLM) needs the vllm package "
            f"(pip install 'or-flywheel[vllm]'); or serve the checkpoint "
            f"with `vllm serve {path} --port 8000` and use --policy openai:{path}@http://127.0.0.1:8000/v1")


@register_backend
class VLLMBackend(Backend):
    scheme = "vllm"

    def __init__(self, spec: PolicySpec, settings: PolicySection) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise ModelError(vllm_missing_message(spec.model), culprit=spec.raw)
        super().__init__(spec, settings)
        self._llm: Any = None

    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        self.counters.requests_sent += len(requests)
        try:
            outcomes = await asyncio.to_thread(self._generate, list(requests))
        except Exception as exc:  # engine start-up or CUDA fault: infrastructure
            outcomes = [InfraFailure(kind="backend", message=f"{type(exc).__name__}: {exc}"[:300])] * len(requests)
        for req, out in zip(requests, outcomes, strict=True):
            on_result(req, out)

    def _generate(self, requests: list[ChatRequest]) -> list[Completion | InfraFailure]:
        from vllm import LLM, SamplingParams  # type: ignore[import-not-found]

        if self._llm is None:
            self._llm = LLM(model=self.spec.model)
        params = [SamplingParams(temperature=r.temperature, top_p=r.top_p, max_tokens=r.max_tokens, seed=r.seed)
                  for r in requests]
        t0 = time.perf_counter()
        outputs = self._llm.chat([list(r.messages) for r in requests], params, use_tqdm=False)
        latency = (time.perf_counter() - t0) / max(1, len(requests))
        return [Completion(text=o.outputs[0].text, finish_reason=o.outputs[0].finish_reason or "",
                           usage={"completion_tokens": len(o.outputs[0].token_ids)}, latency_s=latency)
                for o in outputs]
