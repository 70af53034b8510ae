"""The demo's committed figures and table: Pass@1 (strict and lenient) and the policy's acceptance by round,
strict Pass@1 per family by round, the miss classes and the contracts' rejections. The seed's claims (clean vs raw
data, CPT vs SFT alone) are measured by ``bench/flywheel_claims.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from flywheel.demo.sizes import lora_alpha

ROUND_PLOTS = ("pass_by_round.png", "pass_by_family.png")


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _label(r: dict[str, Any]) -> str:
    return "zero-shot" if r["round"] == "base" else f"round {r['round']}"


def plot_rounds(results: dict[str, Any], out: Path) -> list[Path]:
    """The demo's figures: overall Pass@1 (strict, lenient) and acceptance by round; strict Pass@1 per family."""
    out.mkdir(parents=True, exist_ok=True)
    rounds = results["rounds"]
    labels = [_label(r) for r in rounds]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = list(range(len(rounds)))
    ax.plot(x, [r["pass@1_strict"] for r in rounds], "o-", label="Pass@1 strict (greedy)")
    ax.plot(x, [r["pass@1_lenient"] for r in rounds], "s--", label="Pass@1 lenient (greedy)")
    acc = [(i, r["policy"]["acceptance_rate"]) for i, r in enumerate(rounds) if "policy" in r]
    if acc:
        ax.plot(*zip(*acc, strict=True), "^:", label="policy samples accepted")
    ax.set_xticks(x, labels)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share")
    ax.set_title(f"Flywheel rounds ({results['size']}, {results['settings']['heldout_problems']} unseen problems)")
    ax.legend(fontsize=8)
    _save(fig, out / ROUND_PLOTS[0])

    families = sorted({f for r in rounds for f in r["per_family"]})
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(families) * len(rounds)), 3.8))
    width = 0.8 / max(1, len(rounds))
    for i, r in enumerate(rounds):
        ax.bar([j + i * width for j in range(len(families))],
               [r["per_family"].get(f, {}).get("pass@1_strict", 0.0) for f in families], width, label=_label(r))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(families))], families, rotation=40, ha="right",
                  fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("Pass@1 strict")
    ax.legend(fontsize=8)
    _save(fig, out / ROUND_PLOTS[1])
    return [out / n for n in ROUND_PLOTS]


def _round_table(rounds: list[dict[str, Any]], title: str, column: str, keys: list[str],
                 cell: Callable[[dict[str, Any], str], str]) -> list[str]:
    """A markdown section: one row per key, one column per round, ``cell(round, key)`` in each."""
    return ["", f"## {title}", "", f"| {column} | " + " | ".join(_label(r) for r in rounds) + " |",
            "|---|" + "---:|" * len(rounds),
            *(f"| {k} | " + " | ".join(cell(r, k) for r in rounds) + " |" for k in keys)]


def _difficulty_cell(r: dict[str, Any], level: str) -> str:
    e = r.get("per_difficulty", {}).get(level)
    return f"{_pct(e['pass@1_strict'])} ({e['items']})" if e else "-"


def _benchmark_cell(r: dict[str, Any], bench: str) -> str:
    e = r.get("benchmarks", {}).get(bench, {})
    return (f"{_pct(e['pass@1_strict'])} / {_pct(e['pass@1_lenient'])} ({e['items']})" if "pass@1_strict" in e
            else e.get("skipped", "-")[:20])


def short_run(r: dict[str, Any]) -> str | None:
    """A sentence for a training that its time budget shaped: one that stopped before its recipe's steps (on a slower
    machine the budget, ``sft_budget_s``, binds first, and a score after fewer steps is not the size's score), or
    one that ran past the budget to its floor (``sft_min_steps``)."""
    done, planned, plan = r.get("steps"), r.get("steps_planned"), r.get("budget_plan") or {}
    if "fit_steps" in plan and done is not None:
        return (f"{_label(r).capitalize()} trained {done} steps, past its {plan['budget_s']:.0f} s time budget: "
                f"{plan['fit_steps']} fit on this machine ({plan['step_s']:.1f} s a step), and the budget never "
                f"cuts below sft_min_steps = {plan['min_steps']}.")
    if done is None or not planned or done >= planned:
        return None
    why = (f"its {plan['budget_s']:.0f} s time budget (sft_budget_s) bound first on this machine" if plan
           else "it stopped early")
    return f"{_label(r).capitalize()} trained {done} of its {planned} steps: {why}."


def write_rounds_table(results: dict[str, Any], out: Path) -> Path:
    """results.json and results.md: the overall table by round, the per-family table, policy acceptance and the
    failure classes (readable at 80 columns)."""
    rounds = results["rounds"]
    s = results["settings"]
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [f"# Flywheel demo: {results['size']}", "",
             f"Model: {s['init']}"
             + (f" (LoRA r={s['lora_r']}, alpha {lora_alpha(s['lora_r'], s['lora_alpha']):g}, merged)" if s.get("lora_r")
                else "")
             + f"; families: {len(s['families'])}; held-out: {s['heldout_problems']} problems from "
             f"unseen seeds (difficulty {', '.join(map(str, s['heldout_difficulties']))}; "
             f"{s['heldout_in_training_store']} also in the training store); greedy; template {s['template']}; "
             f"{s['api']}; reference programs in the {s['render_style']} style. Wall {results['wall_s']:.0f} s on "
             f"{s['cpus']} CPUs (load at start {s['load_at_start']})"
             + ("; resumed: the wall is this invocation's, the stage times are the runs'." if results.get("resumed")
                else "."), "",
             "## Pass@1 by flywheel round", "",
             "| round | train rows | steps | train s | strict | lenient | accepted | samples |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rounds:
        pol = r.get("policy")
        acc = f"{_pct(pol['acceptance_rate'])}" if pol else "-"
        lines.append(f"| {_label(r)} | {r['train_rows']} | {r.get('steps') or '-'} | {r.get('train_s') or '-'} "
                     f"| {_pct(r['pass@1_strict'])} | {_pct(r['pass@1_lenient'])} | {acc} "
                     f"| {pol['samples'] if pol else '-'} |")
    short = [n for n in map(short_run, rounds) if n]
    lines += ["", *short] if short else []
    levels = sorted({d for r in rounds for d in r.get("per_difficulty", {})})
    if levels:
        lines += _round_table(rounds, "Strict Pass@1 by held-out difficulty", "difficulty", levels, _difficulty_cell)
    families = sorted({f for r in rounds for f in r["per_family"]})
    lines += _round_table(rounds, "Strict Pass@1 per family", "family", families,
                          lambda r, fam: _pct(r["per_family"].get(fam, {}).get("pass@1_strict")))
    benches = sorted({b for r in rounds for b in r.get("benchmarks", {})})
    if benches:
        lines += _round_table(rounds, "Zero-shot transfer to benchmarks (strict / lenient Pass@1)", "benchmark",
                              benches, _benchmark_cell)
    lines += ["", "## Why held-out programs missed (strict rule)", ""]
    for r in rounds:
        misses = ", ".join(f"{k} {v}" for k, v in r.get("miss_classes", {}).items()) or "none"
        wrong = ", ".join(f"{k} {v}" for k, v in r.get("miss_anatomy", {}).items())
        lines.append(f"- {_label(r)}: {misses}" + (f"; what they got wrong: {wrong}" if wrong else ""))
    lines += ["", "## Policy samples the contracts rejected", ""]
    for r in rounds:
        if "policy" in r:
            p = r["policy"]
            ex = ", ".join(f"{k} {v}" for k, v in p["rejected_by_exec_status"].items()) or "none"
            co = ", ".join(f"{k} {v}" for k, v in p["failed_contracts"].items()) or "none"
            lines.append(f"- {_label(r)}: {p['accepted']}/{p['samples']} accepted; rejected by execution status: "
                         f"{ex}; failing contracts: {co}")
    lines += ["", "![Pass@1 by round](pass_by_round.png)", "", "![Pass@1 per family](pass_by_family.png)", ""]
    path = out / "results.md"
    path.write_text("\n".join(lines))
    return path
