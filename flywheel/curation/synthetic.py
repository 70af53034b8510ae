"""Shards built straight from the generators, in the store's export format, for tests, benches and demos.

The store's export is the real input of the trainer; this writes the same files (``train.parquet``,
``val.parquet``, their ``.jsonl`` twins, ``manifest.json``) from ``generate_problem`` so the trainer can be tested
without a store. It sits with curation (it writes training text from the generators, a layer above the trainer,
which only reads shards). The assistant turn is the reference program rendered by ``solvers.render.render`` when
the model's API supports it, else the formulation text and the instance data as JSON; either way it copies the
question's numbers, which is what the demo must learn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.generators.base import derive_seed, family_names, generate_problem
from solvers.errors import FlywheelError
from solvers.render import render

SYSTEM = "You are an operations research expert. Write a complete Python program that models and solves the problem."


def _answer(problem: Any, api: str) -> str:
    try:
        return f"```python\n{render(problem.ir, api)}\n```"
    except FlywheelError:  # the API cannot express this model (e.g. ortools and a quadratic objective)
        return f"{problem.formulation}\ndata = {json.dumps(problem.params, sort_keys=True)}"


def problem_rows(n: int, seed: int, families: Sequence[str] | None = None, difficulty: int | None = 1,
                 api: str = "gurobipy") -> list[dict[str, Any]]:
    """``n`` SFT rows (system, user question, assistant answer) over ``families`` round-robin."""
    fams = list(families or family_names())
    rows = []
    for i in range(n):
        p = generate_problem(fams[i % len(fams)], derive_seed(seed, i), difficulty)
        rows.append({"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": p.question},
                                  {"role": "assistant", "content": _answer(p, api)}],
                     "problem_id": p.problem_id, "family": p.family, "source": "generator"})
    return rows


def as_cpt(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CPT rows: the question and its answer as one plain document."""
    return [{"text": f"{r['messages'][1]['content']}\n\n{r['messages'][2]['content']}", "problem_id": r["problem_id"],
             "family": r["family"], "source": r["source"]} for r in rows]


def write_shard(out: str | Path, train: list[dict[str, Any]], val: list[dict[str, Any]], kind: str) -> Path:
    """Write a shard directory in the export format; returns its path."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", train), ("val", val)):
        pq.write_table(pa.Table.from_pylist(rows), d / f"{split}.parquet")
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "manifest.json").write_text(json.dumps({"kind": kind, "train_rows": len(train), "val_rows": len(val),
                                                 "source": "flywheel.curation.synthetic"}, indent=2))
    return d


def write_problem_shards(out: str | Path, n_train: int, n_val: int, seed: int = 0,
                         families: Sequence[str] | None = None) -> tuple[Path, Path]:
    """A CPT shard (``out/cpt``) and an SFT shard (``out/sft``) over the same problems; val from other seeds."""
    train = problem_rows(n_train, seed, families)
    val = problem_rows(n_val, seed + 10_000, families)
    base = Path(out)
    return (write_shard(base / "cpt", as_cpt(train), as_cpt(val), "cpt"),
            write_shard(base / "sft", train, val, "sft"))


def write_text_shard(out: str | Path, texts: list[str], n_val: int) -> Path:
    """A CPT shard of plain local text (general data for anchoring tests)."""
    rows = [{"text": t, "problem_id": f"text-{i}", "family": "general", "source": "local"} for i, t in enumerate(texts)]
    return write_shard(out, rows[n_val:], rows[:n_val], "cpt")
