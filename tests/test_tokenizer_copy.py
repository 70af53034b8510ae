"""The demo tokenizer is built for copying (issue 9): every digit is its own token, and an element name is the same
token sequence in the question (after a space) and in the code (after a quote), so copying is id-for-id."""

from __future__ import annotations

from flywheel.generators.base import derive_seed, generate_problem
from solvers.render import render
from training.tokenizer import train_tokenizer


def _corpus() -> list[str]:
    texts = []
    for i in range(12):
        p = generate_problem(("diet", "production_planning", "transportation")[i % 3], derive_seed(1, i), 1, 0.0)
        texts += [p.question, render(p.ir, "gurobipy", p.question)]
    return texts


def test_digits_and_names_copy_token_for_token() -> None:
    texts = _corpus()
    names = ("Urea", "Warehouse_A", "BoneMeal")
    # Frequent mentions after a space: a plain byte-level BPE would merge " Urea" into one token here.
    tok = train_tokenizer(texts * 2 + [f"uses {n}, then {n} and {n}" for n in names] * 50, vocab_size=600)
    ids = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    for text in texts:
        assert tok.decode(ids(text)) == text  # lossless
    digit_ids = {ids(d)[0] for d in "0123456789"}
    assert all(len(ids(d)) == 1 for d in "0123456789")
    assert [t for t in ids("cost 12345 dollars") if t in digit_ids] == [ids(d)[0] for d in "12345"]
    # A name mentioned mid-sentence and the same name as a dict key: its tokens appear unchanged in both.
    for name in names:
        prose, code = ids(f"mixes {name} and more"), ids(f'cost = {{"{name}": 3}}')
        inner = ids(name)
        assert _contains(prose, inner) and _contains(code, inner), (name, tok.convert_ids_to_tokens(prose),
                                                                   tok.convert_ids_to_tokens(code))


def _contains(seq: list[int], part: list[int]) -> bool:
    return any(seq[i:i + len(part)] == part for i in range(len(seq) - len(part) + 1))
