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
