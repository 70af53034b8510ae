"""The demo's committed figures and table: (a) contract-cleaned vs raw SFT data by size, (b) CPT-initialised vs
random-init SFT under the same SFT budget, (c) Pass@1 by flywheel round, and the copy-rate curve over SFT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PLOTS = ("a_clean_vs_raw.png", "b_cpt_vs_random.png", "c_pass_by_round.png", "copy_rate.png")
ROUND_PLOTS = ("pass_by_round.png", "pass_by_family.png")


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in PLOTS]

    a = results["a_clean_vs_raw"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for kind, style in (("clean", "o-"), ("raw", "s--")):
        pts = [(r["rows"], r["val_loss_heldout"]) for r in a if r["data"] == kind and r["val_loss_heldout"] is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), style, label=f"{kind} SFT data")
        acc = [(r["rows"], r["pass@1_strict"]) for r in a if r["data"] == kind]
        if acc:
            ax2.plot(*zip(*acc, strict=True), style, label=f"{kind} SFT data")
    ax.set_xlabel("SFT training rows")
    ax.set_ylabel("held-out val loss (unseen seeds)")
    ax.set_title("(a) contract-cleaned vs raw: loss")
    ax.legend()
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("SFT training rows")
    ax2.set_ylabel("held-out Pass@1 (strict)")
    ax2.set_title("(a) contract-cleaned vs raw: Pass@1")
    ax2.legend()
    _save(fig, paths[0])

    b = results["b_cpt_vs_random"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for key, label in (("cpt_init", "CPT-initialised"), ("random_init", "random init")):
        curve = b[key]["val_curve"]
        if curve:
            ax.plot(*zip(*curve, strict=True), "o-", label=f"{label} (Pass@1 {b[key]['pass@1_strict']:.0%})")
    ax.set_xlabel("SFT step (same budget)")
    ax.set_ylabel("held-out val loss")
    ax.set_title("(b) CPT-initialised vs random-init SFT")
    ax.legend()
    _save(fig, paths[1])

    c = results["c_rounds"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    rounds = [r["round"] for r in c]
    ax.plot(rounds, [r["pass@1_strict"] for r in c], "o-", label="Pass@1 (strict)")
    ax.plot(rounds, [r["pass@1_lenient"] for r in c], "^:", label="Pass@1 (ORLM lenient)")
    ax.plot(rounds, [r["copy_rate"] for r in c], "s--", label="number-copy rate")
    ax.set_xticks(rounds)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("flywheel round (0 = generator data only)")
    ax.set_ylabel("share of unseen-seed problems")
    ax.set_title("(c) Pass@1 by flywheel round")
    ax.legend()
    _save(fig, paths[2])

    cc = results["copy_curve"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    if cc:
        ax.plot([p["step"] for p in cc], [p["copy_rate"] for p in cc], "o-", label="number-copy rate")
        ax.plot([p["step"] for p in cc], [p["pass@1_strict"] for p in cc], "^:", label="Pass@1 (strict)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("SFT step (round 0, CPT-initialised)")
    ax.set_ylabel("share")
    ax.set_title("Copying the question's numbers over SFT")
    ax.legend()
    _save(fig, paths[3])
    return paths


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _loss(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def write_table(results: dict[str, Any], out: Path) -> Path:
    """``results.md`` (the README quotes it) and ``results.json`` (everything measured)."""
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    s = results["settings"]
    lines = [
        "# The flywheel, end to end on CPU: measured results",
        "",
        f"Size `{results['size']}`; families {', '.join(s['families'])} (difficulty {s['difficulty']}, "
        f"{s['api']}); model `{s['arch']}` {s.get('model_overrides') or ''} ({s['params']:,} parameters); "
        f"{s['round0_problems']} round-0 generator problems; {s['heldout_problems']} held-out problems from unseen "
        f"seeds ({s.get('heldout_in_training_store', 'n/a')} of them in the training store); greedy decoding, "
        f"max {s.get('max_tokens', 'n/a')} new tokens; wall time {results['wall_s'] / 60:.1f} min on {s['cpus']} CPU cores "
        f"(load average at start {s['load_at_start']}).",
        "",
        "## (c) Pass@1 by flywheel round (held-out, greedy)",
        "",
        "| round | model | training rows | Pass@1 strict | Pass@1 lenient | copy rate | emits code |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["c_rounds"]:
        lines.append(f"| {r['round']} | `{r['model']}` | {r['train_rows']} | {_pct(r['pass@1_strict'])} | "
                     f"{_pct(r['pass@1_lenient'])} | {_pct(r['copy_rate'])} | {_pct(r['has_code'])} |")
    b = results["b_cpt_vs_random"]
    lines += ["", "## (b) CPT-initialised vs random-init SFT (same SFT steps, data and tokenizer)", "",
              "| init | SFT steps | held-out val loss | Pass@1 strict | copy rate |", "|---|---|---|---|---|"]
    for key, label in (("cpt_init", "CPT"), ("random_init", "random")):
        r = b[key]
        lines.append(f"| {label} | {r['steps']} | {_loss(r['val_loss_heldout'])} | {_pct(r['pass@1_strict'])} | "
                     f"{_pct(r['copy_rate'])} |")
    lines += ["", "## (a) contract-cleaned vs raw self-distillation data (each fine-tunes the round-0 model, same "
              f"steps; Pass@1 on the first {s.get('ablation_eval', '?')} held-out problems)", "",
              "| data | rows | policy samples in it | rejected by the contracts | held-out val loss | Pass@1 strict | "
              "copy rate |", "|---|---|---|---|---|---|---|"]
    for r in results["a_clean_vs_raw"]:
        lines.append(f"| {r['data']} | {r['rows']} | {r.get('policy_rows', 'n/a')} | {r['rejected_rows']} | "
                     f"{_loss(r['val_loss_heldout'])} | {_pct(r.get('pass@1_strict'))} | "
                     f"{_pct(r.get('copy_rate'))} |")
    lines += ["", "## Copy rate over round-0 SFT (held-out probe)", "", "| step | copy rate | Pass@1 strict |",
              "|---|---|---|"]
    for p in results["copy_curve"]:
        lines.append(f"| {p['step']} | {_pct(p['copy_rate'])} | {_pct(p['pass@1_strict'])} |")
    bench = results.get("benchmark", {})
    if "pass@1_strict" in bench:
        lines += ["", f"## Benchmark: nl4opt, first {bench['items']} items", "",
                  f"Pass@1 strict {_pct(bench['pass@1_strict'])}, ORLM-lenient {_pct(bench['pass@1_lenient'])}."]
    lines += ["", "## Stage wall times (s)", "", "| stage | s |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in results["stages"].items()]
    path = out / "results.md"
    path.write_text("\n".join(lines) + "\n")
    return path


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


def write_rounds_table(results: dict[str, Any], out: Path) -> Path:
    """results.json and results.md: the overall table by round, the per-family table, policy acceptance and the
    failure classes (readable at 80 columns)."""
    rounds = results["rounds"]
    s = results["settings"]
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [f"# Flywheel demo: {results['size']}", "",
             f"Model: {s['init']}; families: {len(s['families'])}; held-out: {s['heldout_problems']} problems from "
             f"unseen seeds (difficulty {', '.join(map(str, s['heldout_difficulties']))}; "
             f"{s['heldout_in_training_store']} also in the training store); greedy; template {s['template']}; "
             f"{s['api']}; reference programs in the {s['render_style']} style. Wall {results['wall_s']:.0f} s on "
             f"{s['cpus']} CPUs (load at start {s['load_at_start']}).", "",
             "## Pass@1 by flywheel round", "",
             "| round | train rows | train s | strict | lenient | accepted | samples |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rounds:
        pol = r.get("policy")
        acc = f"{_pct(pol['acceptance_rate'])}" if pol else "-"
        lines.append(f"| {_label(r)} | {r['train_rows']} | {r.get('train_s') or '-'} | {_pct(r['pass@1_strict'])} "
                     f"| {_pct(r['pass@1_lenient'])} | {acc} | {pol['samples'] if pol else '-'} |")
    families = sorted({f for r in rounds for f in r["per_family"]})
    lines += ["", "## Strict Pass@1 per family", "", "| family | " + " | ".join(_label(r) for r in rounds) + " |",
              "|---|" + "---:|" * len(rounds)]
    for fam in families:
        cells = [_pct(r["per_family"].get(fam, {}).get("pass@1_strict")) for r in rounds]
        lines.append(f"| {fam} | " + " | ".join(cells) + " |")
    lines += ["", "## Why held-out programs missed (strict rule)", ""]
    for r in rounds:
        misses = ", ".join(f"{k} {v}" for k, v in r.get("miss_classes", {}).items()) or "none"
        lines.append(f"- {_label(r)}: {misses}")
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
