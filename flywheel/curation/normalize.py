"""Text normalisation shared by exact dedup, near-duplicate detection and decontamination.

Every comparison in curation goes through the same normal form, so that two texts that differ only in case,
punctuation, Unicode presentation, thousands separators or whitespace are the same text. Numbers are kept
(``1,000`` and ``1000`` both become ``1000``): in an OR word problem the numbers are the instance, and two
questions that differ only in their data are different problems.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# A thousands separator inside a number ("12,500") is dropped before punctuation is stripped, so "12,500" is one
# token rather than "12" and "500".
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# One spelling per number ("1000.00" -> "1000", "0.50" -> "0.5", "007" -> "7"): labels and prose disagree on
# zeros. Done with substitutions on the whole text, which run in C, rather than per token in Python.
_ZERO_FRACTION = re.compile(r"(\d)\.0+(?!\d)")
_TRAILING_ZEROS = re.compile(r"(\.\d*?[1-9])0+(?!\d)")
_LEADING_ZEROS = re.compile(r"(?<![\d.])0+(?=\d)")
# Tokens are words or numbers (with an optional decimal part); everything else (markdown, $, %, |) separates them.
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _prepared(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = _THOUSANDS.sub("", text)
    text = _ZERO_FRACTION.sub(r"\1", text)
    text = _TRAILING_ZEROS.sub(r"\1", text)
    return _LEADING_ZEROS.sub("", text)


def normalize_text(text: str) -> str:
    """The canonical form of a text: NFKC, lower case, tokens joined by single spaces."""
    return " ".join(tokenize(text))


def tokenize(text: str) -> list[str]:
    """Lower-cased word and number tokens of ``text`` (punctuation and markup removed, numbers in one spelling)."""
    return _TOKEN.findall(_prepared(text))


def number_set(text: str) -> set[str]:
    """The distinct numbers of a text, spelled as ``tokenize`` spells them."""
    return set(_NUMBER.findall(_prepared(text)))


def tokens_and_numbers(text: str) -> tuple[list[str], set[str]]:
    """``tokenize`` and ``number_set`` of one text, normalising it once."""
    prepared = _prepared(text)
    return _TOKEN.findall(prepared), set(_NUMBER.findall(prepared))


def exact_key(text: str) -> str:
    """sha256 of the normal form: equal keys mean texts equal up to case, punctuation and spacing."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()


def ngrams(tokens: list[str], n: int) -> set[str]:
    """Distinct word n-grams of ``tokens``; a text shorter than ``n`` gives its whole text as its one gram."""
    if len(tokens) < n:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def shingle_set(text: str, n: int) -> set[str]:
    """Word n-gram shingles as strings: the exact-Jaccard reference the hashed forms are checked against."""
    return ngrams(tokenize(text), n)


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
