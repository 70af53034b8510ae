"""``flywheel report``: one HTML page with PNG plots of rounds, training runs and evaluations.

Three sources, each optional: the store (pass rates by family and round, failure taxonomy), run folders written by
``flywheel train`` (``metrics.jsonl``: loss and MFU), and evaluation folders written by ``flywheel eval ... --out``
(``summary.json``: per-benchmark bars, strict vs lenient). A section with no data says so instead of plotting
nothing. The page is static (relative ``<img>`` paths) so it can be committed, mailed or served as is.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402


@dataclass
class Section:
    title: str
    plots: list[str] = field(default_factory=list)  # PNG file names, relative to the page
    tables: list[str] = field(default_factory=list)  # HTML fragments
    note: str = ""


def _save(fig: Any, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name, dpi=90)
    plt.close(fig)
    return name


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---- rounds (the store) ----------------------------------------------------------------------------------------


def rounds_section(store_path: Path, out: Path) -> Section:
    section = Section("Rounds")
    if not store_path.exists():
        section.note = f"no store at {store_path}"
        return section
    from flywheel.store import Store

    with Store.open(store_path, create=False) as store:
        rates = store.query(
            "select family, round, count(*) as n, avg(case when accepted then 1.0 else 0.0 end) as rate "
            "from samples group by 1, 2 order by 1, 2").to_pylist()
        statuses = store.query(
            "select family, exec_status, count(*) as n from samples group by 1, 2 order by 1, 2").to_pylist()
    if not rates:
        section.note = "the store holds no samples yet"
        return section
    families = sorted({r["family"] for r in rates})
    rounds = sorted({r["round"] for r in rates})
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(families) * max(1, len(rounds))), 3.8))
    width = 0.8 / len(rounds)
    for i, rnd in enumerate(rounds):
        vals = {r["family"]: r["rate"] for r in rates if r["round"] == rnd}
        ax.bar([f + i * width for f in range(len(families))], [100 * vals.get(f, 0) for f in families], width,
               label=f"round {rnd}")
    ax.set_xticks([f + 0.4 - width / 2 for f in range(len(families))], families, rotation=45, ha="right",
                  fontsize=8)
    ax.set(ylabel="accepted %", title="pass rate by family and round", ylim=(0, 105))
    ax.legend(fontsize=7)
    section.plots.append(_save(fig, out, "rounds_pass_rate.png"))

    kinds = sorted({r["exec_status"] for r in statuses})
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for r in statuses:
        counts[r["family"]][r["exec_status"]] = r["n"]
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(families)), 3.8))
    bottom = [0] * len(families)
    for kind in kinds:
        vals = [counts[f].get(kind, 0) for f in families]
        ax.bar(families, vals, bottom=bottom, label=kind)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set(ylabel="executions", title="failure taxonomy (execution status) by family")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    ax.legend(fontsize=7)
    section.plots.append(_save(fig, out, "rounds_taxonomy.png"))
    section.tables.append(_table(["family", "round", "samples", "accepted %"],
                                 [(r["family"], r["round"], r["n"], f"{100 * r['rate']:.1f}") for r in rates]))
    return section


# ---- training runs ---------------------------------------------------------------------------------------------


def training_section(run_dirs: Sequence[Path], out: Path) -> Section:
    section = Section("Training")
    runs: dict[str, list[dict[str, Any]]] = {}
    for d in run_dirs:
        for metrics in sorted(d.glob("**/metrics.jsonl")) if d.is_dir() else []:
            rows = [json.loads(x) for x in metrics.read_text().splitlines() if x.strip()]
            train = [r for r in rows if "loss" in r and "step" in r]
            if train:
                runs[str(metrics.parent.relative_to(d) if metrics.parent != d else d.name)] = train
    if not runs:
        section.note = "no training runs (metrics.jsonl) found"
        return section
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for name, rows in runs.items():
        axes[0].plot([r["step"] for r in rows], [r["loss"] for r in rows], label=name)
        axes[1].plot([r["step"] for r in rows], [100 * r.get("mfu", 0.0) for r in rows], label=name)
    axes[0].set(xlabel="step", ylabel="loss", title="training loss")
    axes[1].set(xlabel="step", ylabel="MFU %", title="model FLOPs utilisation")
    for ax in axes:
        ax.legend(fontsize=7)
    section.plots.append(_save(fig, out, "training_curves.png"))
    rows_out = []
    for name, rows in runs.items():
        mfu = sorted(r.get("mfu", 0.0) for r in rows)
        tps = sorted(r.get("tokens_per_s", 0.0) for r in rows)
        rows_out.append((name, len(rows), f"{rows[0]['loss']:.3f}", f"{rows[-1]['loss']:.3f}",
                         f"{tps[len(tps) // 2]:.0f}", f"{100 * mfu[len(mfu) // 2]:.2f}"))
    section.tables.append(_table(["run", "steps", "first loss", "last loss", "median tokens/s", "median MFU %"],
                                 rows_out))
    return section


# ---- evaluations -----------------------------------------------------------------------------------------------


def evaluation_section(eval_dirs: Sequence[Path], out: Path) -> Section:
    section = Section("Evaluation")
    entries: list[tuple[str, str, dict[str, Any]]] = []  # (eval name, benchmark, summary entry)
    for d in eval_dirs:
        for summary_path in sorted(d.glob("**/summary.json")) if d.is_dir() else []:
            doc = json.loads(summary_path.read_text())
            summary = doc.get("summary", {})
            name = doc.get("policy") or summary_path.parent.name
            for bench, entry in summary.items():
                if bench != "overall" and isinstance(entry, dict) and "rules" in entry:
                    entries.append((str(name), bench, entry))
    if not entries:
        section.note = "no evaluation summaries (summary.json) found"
        return section
    labels = [f"{bench}\n{name}" if len({n for n, _, _ in entries}) > 1 else bench for name, bench, _ in entries]
    rules = sorted({r for _, _, e in entries for r in e["rules"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(entries)), 3.8))
    width = 0.8 / max(1, len(rules))
    for i, rule in enumerate(rules):
        ax.bar([x + i * width for x in range(len(entries))],
               [100 * e["rules"].get(rule, {}).get("pass@1", 0.0) for _, _, e in entries], width, label=rule)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(entries))], labels, fontsize=8)
    ax.set(ylabel="Pass@1 %", title="Pass@1 per benchmark: strict vs lenient", ylim=(0, 105))
    ax.legend(fontsize=7)
    section.plots.append(_save(fig, out, "evaluation_pass1.png"))
    rows = [(name, bench, e["labelled_items"],
             *[f"{100 * e['rules'].get(r, {}).get('pass@1', 0.0):.1f}" for r in rules],
             ", ".join(f"{k}={v}" for k, v in e.get("miss_classes", {}).items()))
            for name, bench, e in entries]
    section.tables.append(_table(["policy", "benchmark", "labelled", *[f"{r} %" for r in rules], "misses"], rows))
    return section


# ---- page ------------------------------------------------------------------------------------------------------

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}img{max-width:100%;display:block;
margin:1em 0}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px}
.note{color:#777}"""
# Marks each plot once the browser has decoded it, so a headless check can see that every image really loaded.
_SCRIPT = """window.addEventListener('load',()=>{for(const i of document.images){i.dataset.loaded=
(i.complete&&i.naturalWidth>0)?'yes':'no'}document.body.dataset.ready='yes'});"""


def build_report(out: Path, store: Path | None = None, runs: Sequence[Path] = (), evals: Sequence[Path] = (),
                 title: str = "or-flywheel report") -> Path:
    """Write ``out/index.html`` and its PNGs; returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    sections = [rounds_section(store, out) if store else Section("Rounds", note="no store given"),
                training_section(runs, out), evaluation_section(evals, out)]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body><h1>{html.escape(title)}</h1>"]
    for s in sections:
        parts.append(f"<h2>{html.escape(s.title)}</h2>")
        if s.note:
            parts.append(f"<p class='note'>{html.escape(s.note)}</p>")
        parts += [f"<img src='{p}' alt='{html.escape(p)}'>" for p in s.plots]
        parts += s.tables
    parts.append("</body></html>")
    page = out / "index.html"
    page.write_text("\n".join(parts))
    return page
