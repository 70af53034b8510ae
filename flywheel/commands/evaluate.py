"""``flywheel eval score`` (re-score existing outputs) and ``flywheel eval run`` (a policy on benchmarks)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from solvers.errors import FlywheelError


def _rules(rule: str) -> tuple[str, ...]:
    from contracts.tolerance import RULES
    from flywheel.evaluate.score import DEFAULT_RULES
    from solvers.errors import unknown_name

    if rule == "all":
        return DEFAULT_RULES
    names = tuple(r.strip() for r in rule.split(",") if r.strip())
    for r in names:
        if r not in RULES:
            raise unknown_name("tolerance rule", r, [*RULES, "all"])
    return names


def summary_table(summary: dict[str, Any], rules: tuple[str, ...], k: int = 1) -> list[dict[str, Any]]:
    """Rows of the Pass@1 table (one per benchmark): print them with ``render_table``."""
    rows = []
    for name, entry in summary.items():
        row: dict[str, Any] = {"benchmark": name, "items": entry["items"], "labelled": entry["labelled_items"]}
        for r in rules:
            e = entry["rules"][r]
            row[f"{r} passed"] = e["passed"]
            row[f"{r} pass@1"] = f"{100 * e['pass@1']:.1f}%"
            if k > 1:
                row[f"{r} pass@{k}"] = f"{100 * e[f'pass@{k}']:.1f}%"
        row["misses (strict)"] = ", ".join(f"{c}={n}" for c, n in entry["miss_classes"].items()) or "-"
        row["negated obj"] = entry.get("negated_objective", 0)  # passes read as -objective (score._matches)
        rows.append(row)
    return rows


def _print_summary_table(console: Console, rows: list[dict[str, Any]], title: str) -> None:
    pass1 = [c for c in (rows[0] if rows else {}) if c.endswith("pass@1")]
    render_table(rows, console, title=title, priority=["benchmark", *pass1, "items"])


def register(app: typer.Typer) -> None:
    eval_app = typer.Typer(help="Evaluate policies and score existing outputs.", no_args_is_help=True)

    @eval_app.command("score")
    def score(
        completions: Path = typer.Option(..., "--completions", help="JSONL: id, answer, completion or code."),
        rule: str = typer.Option("all", "--rule", help="strict | orlm_lenient | all (comma-separated allowed)"),
        out: Path | None = typer.Option(None, "--out", help="Write verdicts.jsonl and summary.json here."),
        workers: int | None = typer.Option(None, "--workers", min=1),
        sandbox: str | None = typer.Option(None, "--sandbox", help="URL of a running `flywheel sandbox serve` "
                                           "(default: FLYWHEEL_SANDBOX_URL; else a local pool)"),
        timeout: float = typer.Option(60.0, "--timeout", help="Per-item wall-clock limit (s)."),
        k: int = typer.Option(1, "--k", min=1, help="Also report pass@k (needs k samples per id)."),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Score outputs that already exist (e.g. another model's published completions)."""
        from flywheel.evaluate.runner import score_completions, write_results
        from flywheel.evaluate.score import load_completions

        rules = _rules(rule)
        if sandbox:
            os.environ["FLYWHEEL_SANDBOX_URL"] = sandbox  # read by the runner, as by the rewards
        items = load_completions(completions)
        if not items:
            raise FlywheelError("no completions in file", culprit=str(completions))
        verdicts, summary = score_completions(items, rules=rules, timeout_s=timeout, workers=workers, k=k,
                                              progress=fmt == "table")
        if out:
            write_results(out, verdicts, summary, {"completions": str(completions)})
        if fmt == "json":
            typer.echo(json.dumps(summary, indent=2, sort_keys=True))
            return
        console = Console()
        _print_summary_table(console, summary_table(summary, rules, k), "Pass@1 by benchmark and rule")
        disputes = sorted({i for e in summary.values() for i in e["disputes"]})
        if disputes:
            console.print(f"label disputes to review ({len(disputes)}): {', '.join(disputes[:20])}")
        if out:
            console.print(f"wrote {out / 'verdicts.jsonl'} and {out / 'summary.json'}")

    @eval_app.command("run")
    def run(
        policy: str = typer.Option(..., "--policy", help="openai:MODEL@URL | hf:PATH | vllm:PATH"),
        benchmark: str = typer.Option(..., "--benchmark", help="NAME[,NAME...] (pulled cards) or a path"),
        rule: str = typer.Option("all", "--rule", help="strict | orlm_lenient | all"),
        k: int = typer.Option(1, "--k", min=1, help="samples per item (pass@k); 1 = greedy Pass@1"),
        temperature: float | None = typer.Option(None, "--temperature", help="default 0 for k=1, else 0.7"),
        api: str = typer.Option("gurobipy", "--api", help="target solver API in the prompt"),
        limit: int | None = typer.Option(None, "--limit", min=1, help="first N items of each benchmark"),
        timeout: float = typer.Option(60.0, "--timeout", help="per-item wall-clock limit (s)"),
        self_correct: int = typer.Option(0, "--self-correct", min=0, help="repair turns, reported separately"),
        out: Path | None = typer.Option(None, "--out", help="write verdicts.jsonl and summary.json here"),
        cache_dir: Path | None = typer.Option(None, "--cache-dir", help="response cache (default: OUT/cache)"),
        workers: int | None = typer.Option(None, "--workers", min=1),
        sandbox: str | None = typer.Option(None, "--sandbox", help="URL of a running `flywheel sandbox serve` "
                                           "(default: FLYWHEEL_SANDBOX_URL; else a local pool)"),
        config: Path | None = typer.Option(None, "--config", help="TOML with a [policy] section"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Zero-shot Pass@1 of a policy on OR benchmarks, strict and lenient side by side."""
        from flywheel.config import load_config
        from flywheel.evaluate.run import evaluate_policy, load_items
        from flywheel.evaluate.runner import write_results

        rules = _rules(rule)
        if sandbox:
            os.environ["FLYWHEEL_SANDBOX_URL"] = sandbox  # read by the runner, as by the rewards
        names = [b.strip() for b in benchmark.split(",") if b.strip()]
        items = load_items(names, limit)
        if not items:
            raise FlywheelError("no benchmark items to evaluate", culprit="--benchmark")
        settings = load_config(config).policy
        cache = cache_dir or ((out / "cache") if out else Path.home() / ".cache" / "or-flywheel" / "eval-responses")
        result = evaluate_policy(items, policy, rules=rules, k=k, temperature=temperature, api=api,
                                 timeout_s=timeout, self_correct=self_correct, cache_dir=cache, workers=workers,
                                 settings=settings, progress=fmt == "table")
        meta = {"policy": policy, "benchmarks": names, "k": k, "api": api, "counters": result.counters,
                "infra_errors": len(result.infra_errors)}
        if self_correct:
            meta["self_corrected_summary"] = result.corrected_summary
        if out:
            write_results(out, result.verdicts, result.summary, meta)
        meta["model_card"] = _record_on_card(policy, result.summary, k=k, api=api, rules=rules)
        if fmt == "json":
            typer.echo(json.dumps({"summary": result.summary, **meta}, indent=2, sort_keys=True))
            return
        console = Console()
        _print_summary_table(console, summary_table(result.summary, rules, k), "Pass@1 by benchmark and rule")
        if self_correct:
            _print_summary_table(console, summary_table(result.corrected_summary, rules),
                                 f"With up to {self_correct} self-correction turn(s) (not zero-shot)")
        if result.infra_errors:
            console.print(f"[yellow]{len(result.infra_errors)} request(s) failed on the infrastructure side "
                          "(not counted as model failures; re-run to retry them)[/]")

    app.add_typer(eval_app, name="eval")


def _record_on_card(policy: str, summary: dict, *, k: int, api: str,
                    rules: list[str]) -> str | None:
    """An ``hf:DIR`` policy that is a checkpoint directory gets each benchmark's result on its model card
    (README.md; same benchmark and settings replace the older entry). Returns the card path, or None."""
    from training.card import record_eval

    if not policy.startswith("hf:"):
        return None
    path = None
    settings = f"zero-shot k={k} api={api} rules={','.join(rules)}"
    for name, entry in summary.items():  # keyed by the benchmark's card name (not the --benchmark path given)
        if name in ("overall", "all"):
            continue
        result = {"benchmark": name, "settings": settings, "items": entry["items"],
                  "labelled_items": entry["labelled_items"],
                  "pass@1": {r: v["pass@1"] for r, v in entry["rules"].items()}}
        path = record_eval(policy[len("hf:"):], result) or path
    return str(path) if path else None
