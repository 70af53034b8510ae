"""Batched decoding for the ``hf:`` backend: a KV-cache loop that drops a row from the batch as soon as it is done
and lets the next waiting prompt take its place (``stream``; ``decode`` is one batch admitted at once).

Why not ``model.generate``: it keeps computing every row until the last one stops, so one completion that loops to
the token limit makes the whole batch pay for it (a batch of 32 costs ~6x a batch of 1 per step on this CPU), and
it cannot stop a row at the end of its code block. Here each step runs only the rows still going; the cache, the
attention mask and the positions are cut down to them (``Cache.batch_select_indices``), and a waiting prompt joins
at once instead of after the slowest row of its predecessors (``bench/hf_refill.py``: 1.0x on 24 MAMO prompts whose
completions all ended near the same length, 24/24 identical; the gain grows with how ragged the lengths are).

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

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contracts.extract import PYTHON_TAGS, closed_code_blocks, imports_solver


@dataclass
class Decoded:
    tokens: list[int]  # new tokens, without the end-of-sequence token
    finish_reason: str  # "stop" (end of sequence or end of the code block) | "length" | "repeat"
    wall_s: float = 0.0  # from the row's admission (its prefill) to its end


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
    """Decode every row of a left-padded batch at once (``stream`` with every row admitted up front)."""
    prompts = [ids[m.bool()].tolist() for ids, m in zip(input_ids, attention_mask, strict=True)]
    return stream(model, prompts, slots=len(prompts), max_new=max_new, eos=eos, pick=pick, text_of=text_of,
                  repeat_stop=repeat_stop)


def stream(model: Any, prompts: Sequence[Sequence[int]], *, slots: int, max_new: int, eos: int | None,
           pick: Callable[[Any, list[int]], Any], text_of: Callable[[list[int]], str] | None = None,
           repeat_stop: int = 0, pad_id: int = 0,
           on_done: Callable[[int, Decoded], None] | None = None) -> list[Decoded]:
    """Decode ``prompts`` with at most ``slots`` rows in the batch: a row that ends leaves at once and the next
    waiting prompt takes its place (continuous batching). ``pick(logits_BV, rows)`` returns the next token of each
    active row (``rows``: their indices in ``prompts``); ``text_of(tokens)`` turns on stopping at a closed code
    block; ``repeat_stop`` > 0 stops a row whose last ``repeat_stop`` tokens loop (``RepeatGuard``); ``on_done(i,
    decoded)`` hears of each row as it ends.

    A newcomer's prompt is prefilled on its own and its cache joined to the batch's, both left-padded to the longer
    (masked keys: each row attends to exactly its own tokens, at its own positions); leading columns no row attends
    to are cut after each departure, so the cache spans at most the oldest row's prompt and output. Models whose
    cache is not a plain ``DynamicLayer`` per layer (sliding windows) take newcomers only when the batch is empty."""
    import torch
    from transformers import DynamicCache

    n = len(prompts)
    out: list[list[int]] = [[] for _ in range(n)]
    result: list[Decoded | None] = [None] * n
    guards = [RepeatGuard(repeat_stop) for _ in range(n)] if repeat_stop > 0 else None
    cache_kw = cache_argument(model)
    device = getattr(model, "device", None) or "cpu"

    admitted = [time.perf_counter()] * n

    def finish(r: int, why: str) -> None:
        result[r] = Decoded(out[r], why, time.perf_counter() - admitted[r])
        if on_done is not None:
            on_done(r, result[r])

    pending = deque(range(n))
    if max_new <= 0:
        for r in pending:
            finish(r, "length")
        pending.clear()
    rows: list[int] = []  # the active rows, in batch order
    cache: Any = None
    joinable = True  # can newcomers join a running batch? Known from the first prefill's cache layers
    mask = nxt = next_pos = None  # [B, T] keys attended; [B] last picked tokens; [B] their positions
    with torch.no_grad():
        while rows or pending:
            parts = []
            if rows:
                mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
                parts.append(model(input_ids=nxt.view(-1, 1), attention_mask=mask, position_ids=next_pos.view(-1, 1),
                                   use_cache=True, logits_to_keep=1, **{cache_kw: cache}).logits[:, -1, :])
                next_pos = next_pos + 1
            if pending and len(rows) < slots and (not rows or joinable):
                new = [pending.popleft() for _ in range(min(slots - len(rows), len(pending)))]
                for r in new:
                    admitted[r] = time.perf_counter()
                width = max(len(prompts[r]) for r in new)
                ids = torch.full((len(new), width), pad_id, dtype=torch.long)
                m = torch.zeros((len(new), width), dtype=torch.long)
                for j, r in enumerate(new):
                    k = len(prompts[r])
                    ids[j, width - k:] = torch.as_tensor(list(prompts[r]), dtype=torch.long)
                    m[j, width - k:] = 1
                ids, m = ids.to(device), m.to(device)
                fresh = DynamicCache(config=model.config)
                parts.append(model(input_ids=ids, attention_mask=m, position_ids=(m.cumsum(-1) - 1).clamp_(min=0),
                                   use_cache=True, logits_to_keep=1, **{cache_kw: fresh}).logits[:, -1, :])
                joinable = _joinable(fresh)
                first_pos = m.sum(-1)
                if rows:
                    mask = _join(cache, mask, fresh, m)
                    next_pos = torch.cat([next_pos, first_pos])
                else:
                    cache, mask, next_pos = fresh, m, first_pos
                rows = rows + new
            step = pick(torch.cat(parts) if len(parts) > 1 else parts[0], rows)
            keep: list[int] = []
            for j, r in enumerate(rows):
                t = int(step[j])
                if eos is not None and t == eos:
                    finish(r, "stop")
                    continue
                out[r].append(t)
                # A fence ends in a backtick token: only then can a block have just closed.
                if text_of is not None and "`" in text_of(out[r][-2:]) and code_block_closed(text_of(out[r])):
                    finish(r, "stop")
                elif guards is not None and guards[r].looping(out[r]):
                    finish(r, "repeat")
                elif len(out[r]) >= max_new:
                    finish(r, "length")
                else:
                    keep.append(j)
            nxt = step
            if len(keep) < len(rows):
                rows = [rows[j] for j in keep]
                if not rows:
                    cache = mask = nxt = next_pos = None
                    continue
                idx = torch.tensor(keep, device=mask.device)
                cache.batch_select_indices(idx)
                mask, nxt, next_pos = mask[idx], nxt[idx], next_pos[idx]
                if joinable:
                    mask = _trim(cache, mask)
    return [d for d in result if d is not None]


def _joinable(cache: Any) -> bool:
    """Can newcomers' keys be joined to this cache by left padding? Plain full-attention layers only."""
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None]))


def _join(cache: Any, mask: Any, fresh: Any, fresh_mask: Any) -> Any:
    """Append ``fresh``'s rows to ``cache`` (both left-padded to the longer); returns the joined mask."""
    import torch
    import torch.nn.functional as F

    width = max(mask.shape[1], fresh_mask.shape[1])

    def left(x: Any, dim_from_end: int) -> Any:
        short = width - x.shape[-dim_from_end]
        return x if not short else F.pad(x, (0, 0) * (dim_from_end - 1) + (short, 0))

    for a, b in zip(cache.layers, fresh.layers, strict=True):
        a.keys = torch.cat([left(a.keys, 2), left(b.keys, 2)])
        a.values = torch.cat([left(a.values, 2), left(b.values, 2)])
    return torch.cat([left(mask, 1), left(fresh_mask, 1)])


def _trim(cache: Any, mask: Any) -> Any:
    """Cut the leading key columns that no remaining row attends to (from the cache and the mask; plain
    full-attention layers only, ``_joinable``)."""
    used = (mask != 0).any(0)
    if not bool(used.any()) or bool(used[0]):
        return mask
    lead = int(used.int().argmax())
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys[:, :, lead:, :], layer.values[:, :, lead:, :]
    return mask[:, lead:]
