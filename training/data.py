"""Shards in, packed rows out.

Shards are what the store exports (the trainer reads files only, never the store): a directory with
``train.parquet`` / ``val.parquet`` and ``manifest.json``; CPT rows carry ``text``, SFT rows carry ``messages``.

Packing. Documents are laid end to end into rows of ``seq_len`` tokens. Each document gets position ids 0, 1, ...
so the attention layer sees where one ends and the next begins: transformers builds a block-diagonal causal mask
from position ids that restart (``masking_utils.find_packed_sequence_indices``; the varlen flash-attention path
reads the same ids on CUDA), which is why the loop always passes ``attention_mask=None`` and ``use_cache=False``.
Targets are shifted inside each document (the last token of a document predicts nothing), and an SFT document's
targets are kept only where the predicted token belongs to an assistant turn. A document that does not fit in a
row's remaining space starts the next row (the gap is padding: its own position run, no targets). A CPT document
longer than a row is cut into row-sized pieces, each its own document; an SFT document is truncated (counted).

Mixtures. Each source is packed separately (a row never mixes sources); a step's rows are drawn from the sources by
weight with a generator seeded from (seed, step), and each source walks its own shuffled row order epoch after
epoch. The whole data position is therefore a few integers (``state_dict``), which is what resume saves.

Length grouping (``length_groups`` = G > 0, HF's ``group_by_length``): each epoch's shuffled order is cut into runs of
G rows and each run is sorted by row length (longest first), so a step's rows, drawn one after another, have similar
lengths and ``trim_tail`` cuts less padding; every row is still drawn once per epoch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import torch

from solvers.errors import ConfigError
from training.tokenizer import BOS, CHAT_TEMPLATE, render_chat

IGNORE = -100


@dataclass
class Document:
    ids: list[int]
    targets_mask: list[bool]  # per token: does the loss include predicting this token?


@dataclass
class Packed:
    """Rows of packed documents: ``input_ids``, ``position_ids``, ``labels`` (shifted targets, -100 = no loss)."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    labels: torch.Tensor
    truncated: int = 0
    documents: int = 0

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def read_rows(shard_dir: str | Path, split: str) -> list[dict[str, Any]]:
    """Rows of one split of a shard directory (``train`` or ``val``)."""
    path = Path(shard_dir) / f"{split}.parquet"
    if not path.is_file():
        raise ConfigError(f"shard has no {split}.parquet", culprit=str(shard_dir))
    return pq.read_table(path).to_pylist()


def read_manifest(shard_dir: str | Path) -> dict[str, Any]:
    path = Path(shard_dir) / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def tokenize_row(row: dict[str, Any], tokenizer: Any) -> Document:
    """A CPT row (``text``: every token is a target) or an SFT row (``messages``: assistant tokens only)."""
    if row.get("messages"):
        text, spans = chat_spans(list(row["messages"]), tokenizer)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        keep = [any(a <= start < b for a, b in spans) for start, _ in enc["offset_mapping"]]
        # No BOS: the tokens are exactly what ``apply_chat_template(..., add_generation_prompt=True)`` gives the
        # model at inference (the hf: policy, selection, eval), so the prompt it is trained on is the one it sees.
        return Document(enc["input_ids"], keep)
    if "text" in row and row["text"] is not None:
        ids = tokenizer(row["text"], add_special_tokens=False)["input_ids"]
        bos = tokenizer.convert_tokens_to_ids(BOS) if BOS in tokenizer.get_vocab() else tokenizer.bos_token_id
        bos = bos if bos is not None else tokenizer.eos_token_id
        eos = tokenizer.eos_token_id
        return Document([bos, *ids, eos], [False] + [True] * (len(ids) + 1))
    raise ConfigError("row has neither 'text' nor 'messages'", culprit=str(row.get("problem_id", "?")))


def chat_spans(messages: list[dict[str, str]], tokenizer: Any) -> tuple[str, list[tuple[int, int]]]:
    """The chat text and assistant character spans: ``render_chat`` for our own ChatML tokenizer, else the
    checkpoint's own template (an imported SmolLM2, Qwen, ...), so the text trained on is what inference renders.

    With a foreign template each assistant span is found by rendering the conversation up to that turn with the
    generation prompt (the span starts where that text ends) and through it (the span ends there, trailing whitespace
    after the end-of-turn token excluded); a template whose prefixes do not nest is an error naming it.
    """
    template = getattr(tokenizer, "chat_template", None)
    if not template or template == CHAT_TEMPLATE:
        return render_chat(messages)
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:i], tokenize=False, add_generation_prompt=True)
        through = tokenizer.apply_chat_template(messages[:i + 1], tokenize=False).rstrip()
        if not (text.startswith(before) and text.startswith(through) and len(through) > len(before)):
            raise ConfigError("the tokenizer's chat template does not render a conversation's prefixes as prefixes; "
                              "cannot find the assistant tokens", culprit=str(getattr(tokenizer, "name_or_path", "")))
        spans.append((len(before), len(through)))
    return text, spans


def pack(docs: Sequence[Document], seq_len: int, pad_id: int, split_long: bool) -> Packed:
    """Pack ``docs`` in order into rows of ``seq_len`` (see the module docstring for the rules)."""
    pieces: list[Document] = []
    truncated = 0
    for doc in docs:
        if len(doc.ids) <= seq_len:
            pieces.append(doc)
        elif split_long:
            pieces += [Document(doc.ids[i:i + seq_len], doc.targets_mask[i:i + seq_len])
                       for i in range(0, len(doc.ids), seq_len)]
        else:
            truncated += 1
            pieces.append(Document(doc.ids[:seq_len], doc.targets_mask[:seq_len]))
    rows: list[tuple[list[int], list[int], list[int]]] = []
    ids: list[int] = []
    pos: list[int] = []
    lab: list[int] = []

    def close() -> None:
        gap = seq_len - len(ids)
        rows.append((ids + [pad_id] * gap, pos + list(range(gap)), lab + [IGNORE] * gap))

    for doc in pieces:
        if len(doc.ids) < 2:
            continue
        if len(ids) + len(doc.ids) > seq_len:
            close()
            ids, pos, lab = [], [], []
        n = len(doc.ids)
        ids += doc.ids
        pos += list(range(n))
        lab += [doc.ids[i + 1] if doc.targets_mask[i + 1] else IGNORE for i in range(n - 1)] + [IGNORE]
    if ids:
        close()
    if not rows:
        raise ConfigError("no document with at least two tokens to pack", culprit="data")
    t = torch.tensor(rows, dtype=torch.long)
    return Packed(t[:, 0].contiguous(), t[:, 1].contiguous(), t[:, 2].contiguous(), truncated, len(pieces))


def row_lengths(rows: Packed) -> np.ndarray:
    """Per row, one past its last target column (0 for a row without targets): the columns ``trim_tail`` keeps."""
    keep = (rows.labels != IGNORE).numpy()
    last = keep.shape[1] - np.argmax(keep[:, ::-1], axis=1)
    return np.where(keep.any(1), last, 0)


def trim_tail(batch: Packed) -> Packed:
    """The rows cut after the batch's last target column, each row's tail after its last target renumbered to
    continue its position run: nothing there can change the loss or a gradient (attention is causal and those
    positions carry no target), so the result trains exactly like ``batch``. SFT rows are mostly one document plus
    padding (the next document did not fit), so this skips the padding's compute, and a row whose padding no longer
    restarts its positions needs no block-diagonal mask (the faster plain causal attention)."""
    keep = batch.labels != IGNORE
    cols = keep.any(0).nonzero()
    end = int(cols.max()) + 1 if len(cols) else 1  # a target at column c is predicted from inputs 0..c
    ids, pos, lab = batch.input_ids[:, :end], batch.position_ids[:, :end].clone(), batch.labels[:, :end]
    for r in range(pos.shape[0]):
        hits = keep[r, :end].nonzero()
        last = int(hits.max()) if len(hits) else -1
        if last + 1 < end:
            start = last if last >= 0 else 0
            pos[r, start:] = pos[r, start] + torch.arange(end - start)
    # Contiguous copies: a column slice of a row-major tensor is a strided view, and HF's loss views labels flat.
    return Packed(ids.contiguous(), pos, lab.contiguous(), batch.truncated, batch.documents)


@dataclass
class Source:
    name: str
    path: str
    weight: float
    train: Packed
    val: Packed | None  # None when the shard's val split is empty (no held-out loss for this source)


def load_source(path: str, name: str, weight: float, tokenizer: Any, seq_len: int, val_rows: int) -> Source:
    train_rows = read_rows(path, "train")
    val_rows_data = read_rows(path, "val")
    split_long = not any(r.get("messages") for r in train_rows[:50])
    pad = tokenizer.pad_token_id
    train = pack([tokenize_row(r, tokenizer) for r in train_rows], seq_len, pad, split_long)
    val = None
    if val_rows_data:
        full = pack([tokenize_row(r, tokenizer) for r in val_rows_data], seq_len, pad, split_long)
        val = Packed(full.input_ids[:val_rows], full.position_ids[:val_rows], full.labels[:val_rows],
                     full.truncated, full.documents)
    return Source(name or Path(path).name, path, weight, train, val)


@dataclass
class Mixture:
    """Draws a step's rows from the sources by weight; resumable from ``state_dict``."""

    sources: list[Source]
    seed: int
    cursor: dict[str, list[int]] = field(default_factory=dict)  # name -> [epoch, index]
    length_groups: int = 0  # sort each run of this many rows of an epoch's order by length (0 = plain shuffle)

    def __post_init__(self) -> None:
        for s in self.sources:
            self.cursor.setdefault(s.name, [0, 0])
        # A row's length as trim_tail sees it: one past its last target column.
        self._lengths = [row_lengths(s.train) for s in self.sources] if self.length_groups else []
        self._orders: dict[int, tuple[int, np.ndarray]] = {}  # source index -> (epoch, its order): one per draw

    def set_weights(self, weights: dict[str, float]) -> None:
        for s in self.sources:
            s.weight = weights.get(s.name, 0.0)

    def _order(self, index: int, epoch: int) -> np.ndarray:
        cached = self._orders.get(index)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        rng = np.random.default_rng([self.seed, index, epoch])
        order = rng.permutation(len(self.sources[index].train))
        if self.length_groups > 1:
            lengths, g = self._lengths[index], self.length_groups
            order = np.concatenate([run[np.argsort(-lengths[run], kind="stable")]
                                    for run in np.split(order, range(g, len(order), g))])
        self._orders[index] = (epoch, order)
        return order

    def next_batch(self, step: int, rows: int) -> Packed:
        """The ``rows`` rows of optimizer step ``step`` (the same rows for the same step and cursor state)."""
        weights = np.array([s.weight for s in self.sources], dtype=np.float64)
        if weights.sum() <= 0:
            raise ConfigError("every data source has weight 0", culprit="data.sources")
        choice = np.random.default_rng([self.seed, 1_000_003, step]).choice(
            len(self.sources), size=rows, p=weights / weights.sum())
        picked: list[tuple[int, int]] = []
        for k in choice:
            src = self.sources[int(k)]
            epoch, idx = self.cursor[src.name]
            order = self._order(int(k), epoch)
            picked.append((int(k), int(order[idx])))
            idx += 1
            if idx == len(order):
                epoch, idx = epoch + 1, 0
            self.cursor[src.name] = [epoch, idx]
        parts = [(self.sources[k].train, r) for k, r in picked]
        return Packed(
            torch.stack([p.input_ids[r] for p, r in parts]),
            torch.stack([p.position_ids[r] for p, r in parts]),
            torch.stack([p.labels[r] for p, r in parts]),
        )

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": {k: list(v) for k, v in self.cursor.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = {k: list(v) for k, v in state["cursor"].items()}


def corpus_texts(paths: Sequence[str]) -> list[str]:
    """Every train-split text of the shards, as the tokenizer trainer sees it (chat rows rendered)."""
    texts: list[str] = []
    for path in paths:
        for row in read_rows(path, "train"):
            texts.append(render_chat(list(row["messages"]))[0] if row.get("messages") else str(row.get("text", "")))
    return texts
