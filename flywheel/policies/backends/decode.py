"""Batched decoding for the ``hf:`` backend: a KV-cache loop that drops a row from the batch as soon as it is done.

Why not ``model.generate``: it keeps computing every row until the last one stops, so one completion that loops to
the token limit makes the whole batch pay for it (a batch of 32 costs ~6x a batch of 1 per step on this CPU), and
it cannot stop a row at the end of its code block. Here each step runs only the rows still going; the cache, the
attention mask and the positions are cut down to them (``Cache.batch_select_indices``).

A row stops at its end-of-sequence token, at ``max_new`` tokens, or (``stop_after_code``) when its text so far holds
a closed fenced python block that imports a solver: what ``contracts.extract`` would pick from it is complete, and
the prompts ask for one such block and nothing else. With ``repeat_stop`` > 0 a row also stops (finish reason
``"repeat"``) once its last ``repeat_stop`` tokens are one span of at most ``REPEAT_PERIOD`` tokens said over and over
(``m.sum(m.sum(m.sum(``, one dict entry written forty times): greedy decoding that has copied a span three or more
times in a row almost never leaves the loop, and such a row otherwise runs to ``max_new`` and holds its batch.
Greedy rows give the tokens ``generate`` gives (same prefill, same per-row arithmetic; batch composition can only
move float rounding); sampled rows draw from the same per-row ``torch.Generator`` streams, so a sample does not
depend on which batch it lands in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.extract import PYTHON_TAGS, closed_code_blocks, imports_solver


@dataclass
class Decoded:
    tokens: list[int]  # new tokens, without the end-of-sequence token
    finish_reason: str  # "stop" (end of sequence or end of the code block) | "length" | "repeat"


REPEAT_PERIOD = 64  # longest repeated span looked for: a loop over a whole data row is longer than one token


class RepeatGuard:
    """Is a row looping? For each period p <= ``REPEAT_PERIOD``, ``run[p]`` counts how many of the latest tokens
    equal the token p places before them; the last ``run[p] + p`` tokens are then p-periodic. The row loops once
    that suffix holds three copies of its span and reaches ``span`` tokens. O(REPEAT_PERIOD) per token."""

    def __init__(self, span: int) -> None:
        self.span = span
        self.run = [0] * (REPEAT_PERIOD + 1)

    def looping(self, tokens: list[int]) -> bool:
        n, last = len(tokens), tokens[-1]
        hit = False
        for p in range(1, min(REPEAT_PERIOD, n - 1) + 1):
            self.run[p] = self.run[p] + 1 if tokens[n - 1 - p] == last else 0
            hit = hit or (self.run[p] >= 2 * p and self.run[p] + p >= self.span)
        return hit

    @classmethod
    def stop_after(cls, tokens: list[int], span: int) -> int | None:
        """How many of ``tokens`` a row writes before the guard stops it (None: never): the decode loop's rule
        replayed over finished text (tests, ``bench/repeat_stop.py``)."""
        guard, seen = cls(span), []
        for t in tokens:
            seen.append(t)
            if guard.looping(seen):
                return len(seen)
        return None


def code_block_closed(text: str) -> bool:
    """Does ``text`` hold a closed fenced python (or untagged) block that imports a solver?"""
    return text.count("```") >= 2 and any((tag in PYTHON_TAGS or not tag) and imports_solver(body)
                                          for tag, body in closed_code_blocks(text))


def cache_argument(model: Any) -> str:
    """The forward's name for the KV cache: ``cache`` where transformers renamed it (``past_key_values`` warns
    there and goes in 5.40), ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def decode(model: Any, input_ids: Any, attention_mask: Any, *, max_new: int, eos: int | None,
           pick: Callable[[Any, list[int]], Any], text_of: Callable[[list[int]], str] | None = None,
           repeat_stop: int = 0) -> list[Decoded]:
    """Decode every row of a left-padded batch. ``pick(logits_BV, rows)`` returns the next token of each active row
    (``rows``: their indices in the original batch); ``text_of(tokens)`` turns on stopping at a closed code block;
    ``repeat_stop`` > 0 stops a row whose last ``repeat_stop`` tokens loop (``RepeatGuard``)."""
    import torch
    from transformers import DynamicCache

    n = input_ids.shape[0]
    out: list[list[int]] = [[] for _ in range(n)]
    reason = ["length"] * n
    rows = list(range(n))
    guards = [RepeatGuard(repeat_stop) for _ in range(n)] if repeat_stop > 0 else None
    mask = attention_mask.clone()
    pos = (mask.long().cumsum(-1) - 1).clamp_(min=0)
    cache = DynamicCache(config=model.config)
    cache_kw = cache_argument(model)
    step_ids, step_pos = input_ids, pos
    with torch.no_grad():
        for step in range(max_new):
            logits = model(input_ids=step_ids, attention_mask=mask, position_ids=step_pos, use_cache=True,
                           logits_to_keep=1, **{cache_kw: cache}).logits[:, -1, :]
            nxt = pick(logits, rows)
            keep: list[int] = []
            for j, r in enumerate(rows):
                t = int(nxt[j])
                if eos is not None and t == eos:
                    reason[r] = "stop"
                    continue
                out[r].append(t)
                # A fence ends in a backtick token: only then can a block have just closed.
                if text_of is not None and "`" in text_of(out[r][-2:]) and code_block_closed(text_of(out[r])):
                    reason[r] = "stop"
                    continue
                if guards is not None and guards[r].looping(out[r]):
                    reason[r] = "repeat"
                    continue
                keep.append(j)
            if not keep or step + 1 == max_new:
                break
            if len(keep) < len(rows):
                idx = torch.tensor(keep, device=mask.device)
                cache.batch_select_indices(idx)
                mask, nxt, step_pos = mask[idx], nxt[idx], step_pos[idx]
                rows = [rows[j] for j in keep]
            step_ids = nxt.view(-1, 1).to(input_ids.dtype)
            step_pos = step_pos[:, -1:] + 1
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
    return [Decoded(tokens, why) for tokens, why in zip(out, reason, strict=True)]
