"""A byte-level BPE tokenizer trained here with ``tokenizers``, saved in HF format with a chat template.

Digits are split one per token before BPE runs, so no merge can ever fuse "12" or "250": a model that must copy the
numbers of a question into its code then copies digit by digit from a ten-symbol alphabet, instead of having to learn
thousands of number tokens it sees a few times each (issue 9's measured failure mode was exactly that copying).

Names get the same treatment in a cheaper form: a space before a capitalised word is its own pre-token, so
``Urea`` is the same token sequence in the question ("37 dollars for Urea") and in the code (``"Urea": 37``);
byte-level BPE would otherwise give the question's `` Urea`` (space fused) and the code's ``Urea`` different ids,
and a model would have to learn each name's pair instead of copying it. Lower-case prose keeps its fused spaces, so
the cost is one token per name mention.

The chat format is ChatML; ``render_chat`` is the single Python implementation of it, and the saved Jinja template
renders the identical text (tested), so SFT masking and ``apply_chat_template`` at inference agree token for token.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

BOS = "<|endoftext|>"
PAD = "<|pad|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [BOS, PAD, IM_START, IM_END]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def render_chat(messages: list[dict[str, str]]) -> tuple[str, list[tuple[int, int]]]:
    """The ChatML text of ``messages`` and the character spans the loss is taken on.

    Spans cover each assistant message's content and its closing ``<|im_end|>`` (the model must learn to stop);
    the role headers, system and user turns are context only.
    """
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    for message in messages:
        head = f"{IM_START}{message['role']}\n"
        body = f"{message['content']}{IM_END}"
        parts += [head, body, "\n"]
        start = pos + len(head)
        if message["role"] == "assistant":
            spans.append((start, start + len(body)))
        pos = start + len(body) + 1
    return "".join(parts), spans


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE (digits split individually, names apart from the space before them) on ``texts``;
    returns an HF fast tokenizer."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r" (?=\p{Lu})"), behavior="isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=IM_END, pad_token=PAD, unk_token=None,
        additional_special_tokens=[IM_START],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok
