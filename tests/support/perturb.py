"""Light paraphrases of a text and shuffled copies of a model, for measuring what dedup and decontamination catch.

A contaminated sample rarely copies a benchmark item verbatim: a teacher model or a template author reorders
sentences, swaps a few words for synonyms and rewrites a phrase. ``paraphrase`` does exactly that, driven by an
explicit ``numpy.random.Generator``, so tests and ``bench/dedup.py`` can plant paraphrases whose source they know
and measure recall on them.
"""

from __future__ import annotations

import json
import re

import numpy as np

from solvers.ir import Model

# Word (or phrase) swaps common in OR word problems; applied as whole-word, case-insensitive replacements.
SYNONYMS: dict[str, str] = {
    "maximize": "maximise",
    "minimize": "minimise",
    "profit": "earnings",
    "produce": "manufacture",
    "company": "firm",
    "requires": "needs",
    "total": "overall",
    "cost": "expense",
    "costs": "expenses",
    "each": "every",
    "at least": "no less than",
    "at most": "no more than",
    "available": "on hand",
    "how many": "what number of",
    "wants to": "aims to",
    "hours": "hrs",
    "must": "has to",
    "determine": "work out",
    "number of": "count of",
    "per": "for each",
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FILLERS = ("also", "then", "here", "indeed", "now")


def paraphrase(text: str, rng: np.random.Generator, n_swaps: int = 4, n_edits: int = 3) -> str:
    """Reorder sentences, apply up to ``n_swaps`` synonym swaps and ``n_edits`` single-word edits.

    Numbers are never touched: a paraphrase keeps the instance, which is what makes it contamination.
    """
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    if len(sentences) > 2:
        # Keep the final sentence (usually the question) last; shuffle the rest.
        head = [sentences[i] for i in rng.permutation(len(sentences) - 1)]
        sentences = [*head, sentences[-1]]
    out = " ".join(sentences)
    present = [k for k in SYNONYMS if re.search(rf"\b{re.escape(k)}\b", out, flags=re.IGNORECASE)]
    for key in rng.permutation(present)[:n_swaps] if present else []:
        out = re.sub(rf"\b{re.escape(str(key))}\b", SYNONYMS[str(key)], out, count=2, flags=re.IGNORECASE)
    words = out.split(" ")
    editable = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 3]
    for i in rng.permutation(editable)[:n_edits] if editable else []:
        if rng.random() < 0.5:
            words[int(i)] = str(rng.choice(_FILLERS))  # change a word
        else:
            words[int(i)] = f"{words[int(i)]} {rng.choice(_FILLERS)}"  # insert a word
    return " ".join(words)


def shuffled_model(model: Model, seed: int) -> Model:
    """The same model with new names, shuffled variable and row order, scaled rows and a flipped objective sense."""
    rng = np.random.default_rng(seed)
    d = json.loads(model.to_json())
    rename = {v["name"]: f"v{k}" for k, v in enumerate(d["variables"])}
    for v in d["variables"]:
        v["name"] = rename[v["name"]]
    for k, c in enumerate(d["constraints"]):
        scale = float(rng.choice([0.5, 2.0, 3.0]))
        c["name"], c["rhs"] = f"r{k}", c["rhs"] * scale
        c["terms"] = [[rename[a], b * scale] for a, b in c["terms"]][::-1]
    d["variables"] = [d["variables"][k] for k in rng.permutation(len(d["variables"]))]
    d["constraints"] = [d["constraints"][k] for k in rng.permutation(len(d["constraints"]))]
    obj = d["objective"]
    obj["terms"] = [[rename[a], -b] for a, b in obj["terms"]]
    obj["quadratic"] = [[rename[a], rename[b], -c] for a, b, c in obj.get("quadratic", [])]
    obj["constant"] = -obj.get("constant", 0.0)
    obj["sense"] = "maximize" if obj["sense"] == "minimize" else "minimize"
    return Model.model_validate(d)
