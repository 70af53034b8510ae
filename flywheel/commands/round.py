"""``flywheel run-round``: generate, ground-truth, render, execute, check and store one round (resumable)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from flywheel.commands.tables import render_table
from flywheel.config import load_config
from flywheel.round import RoundOutcome, RoundPlan, run_round
from flywheel.store import Store
from solvers.stdout import fd1_redirected

STAGE_LABELS = {"generate": "generate + ground truth", "policy": "policy samples", "execute": "run programs",
                "contracts": "contracts"}


def register(app: typer.Typer) -> None:
    @app.command("run-round")
    def run_round_cmd(
        store: Path | None = typer.Option(None, "--store", help="store directory [default: flywheel-store]"),
        problems: int | None = typer.Option(None, "--problems", help="problems to generate [default: 200]"),
        families: str | None = typer.Option(None, "--families", help="comma-separated families [default: all]"),
        seed: int | None = typer.Option(None, "--seed", help="round seed [default: 0]"),
        workers: int | None = typer.Option(None, "--workers", help="parallel workers [default: cores]"),
        config: Path | None = typer.Option(None, "--config", help="TOML config file"),
        api: str | None = typer.Option(None, "--api", help="solver API of reference programs, or 'rotate'"),
        difficulty: int | None = typer.Option(None, "--difficulty", help="fixed difficulty 1-5 [default: drawn]"),
        infeasible_share: float | None = typer.Option(None, "--infeasible-share",
                                                      help="share of deliberately infeasible instances"),
        suite: str | None = typer.Option(None, "--suite", help="contract suite [default: 'default' if any]"),
        contracts: list[Path] = typer.Option([], "--contracts", help="user contract file(s) (.py) added to the suite"),
        policy: str | None = typer.Option(None, "--policy", help="policy spec (openai:MODEL@URL, hf:PATH, ...): "
                                                                 "also sample K attempts per problem"),
        samples: int = typer.Option(1, "--samples", help="policy samples per problem"),
        temperature: float = typer.Option(0.7, "--temperature", help="policy sampling temperature"),
        problems_file: Path | None = typer.Option(None, "--problems-file",
                                                  help="benchmark-shaped JSONL (id, question, answer) instead of "
                                                       "generated problems"),
        fmt: str = typer.Option("table", "--format", help="table | json (summary)"),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="show a progress bar"),
    ) -> None:
        """Generate N verified problems, run their reference programs in the sandbox, and store everything.

        Re-running the same command resumes an interrupted round (or reports a finished one) without duplicates.
        """
        fam_list = [f.strip() for f in families.split(",") if f.strip()] if families is not None else None
        if contracts:  # user files extend the suite: "default+my_contracts.py"
            suite = "+".join([suite or "default", *(str(c) for c in contracts)])
        cfg = load_config(config, overrides={
            "round": {"problems": problems, "families": fam_list, "seed": seed, "workers": workers, "api": api,
                      "difficulty": difficulty, "infeasible_share": infeasible_share},
            "store": {"path": str(store) if store is not None else None},
        })
        # Unknown family / API / policy scheme fail here, before the store is touched.
        plan = RoundPlan.from_config(cfg, suite=suite, policy=policy, samples=samples, temperature=temperature,
                                     problems_file=str(problems_file) if problems_file else None)
        # Piped output has no terminal width; Rich would squeeze the summary into 80 columns.
        stream = sys.stderr if fmt == "json" else sys.stdout
        console = Console(stderr=fmt == "json", width=None if stream.isatty() else 140)
        with Store.open(cfg.store.path) as st, _stdout_for_json_only(fmt == "json"):
            outcome = _run_with_progress(st, plan, cfg.round.workers, console, progress and fmt != "json")
        if fmt == "json":
            typer.echo(json.dumps({"round": outcome.round, "status": outcome.status, "store": cfg.store.path,
                                   "seconds": round(outcome.seconds, 2), "families": outcome.summary,
                                   "notes": outcome.notes, "rejected_by": outcome.rejected_by}, indent=1, default=str))
            return
        print_summary(console, outcome, cfg.store.path)


@contextmanager
def _stdout_for_json_only(active: bool) -> Iterator[None]:
    """Keep stdout clean for ``--format json``: solver libraries print banners straight to file descriptor 1
    (HiGHS does when a model is first built in this process), which no Python-level redirect can catch, so fd 1
    goes to stderr; Python-level prints follow it there."""
    if not active:
        yield
        return
    with fd1_redirected(2), redirect_stdout(sys.stderr):
        yield


def _run_with_progress(store: Store, plan: RoundPlan, workers: int | None, console: Console,
                       show: bool) -> RoundOutcome:
    if not show:
        return run_round(store, plan, workers)
    with Progress(TextColumn("{task.description:<26}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        tasks: dict[str, TaskID] = {}

        def set_total(stage: str, n: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(STAGE_LABELS.get(stage, stage), total=n)
            else:
                bar.update(tasks[stage], total=n)

        def advance(stage: str, n: int) -> None:
            if stage not in tasks:
                set_total(stage, 0)
            bar.advance(tasks[stage], n)

        return run_round(store, plan, workers, progress=advance, set_total=set_total)


def print_summary(console: Console, outcome: RoundOutcome, store_path: str) -> None:
    rows = outcome.summary
    contracts_ran = any(r["checked"] for r in rows)
    verb = {"new": "finished", "resumed": "resumed and finished", "complete": "was already complete"}[outcome.status]
    # Short headers so the table fits 80 columns; `flywheel sql` / --format json give the long names.
    keys = {"family": "family", "generated": "gen", "verified": "verified", "disputed": "disputed",
            "infeasible": "infeas.", "executed": "exec", "reproduced": "repro", "median_solve_ms": "solve ms"}
    if contracts_ran:
        keys |= {"accepted": "acc", "rejected": "rej"}
    table_rows = [{short: (f"{r[k]:.1f}" if k == "median_solve_ms" and r[k] is not None else r.get(k))
                   for k, short in keys.items()} for r in rows]
    summed = [k for k in keys if k not in ("family", "median_solve_ms")]
    table_rows.append({"family": f"all ({len(rows)} families)", **{keys[k]: sum(r.get(k) or 0 for r in rows)
                                                                   for k in summed}, "solve ms": ""})
    render_table(table_rows, console, title=f"round {outcome.round} {verb} in {outcome.seconds:.1f} s ({store_path})",
                 priority=["family", "gen", "verified", "acc", "rej", "exec", "repro", "infeas.", "disputed",
                           "solve ms"])
    if outcome.rejected_by:
        render_table([{"contract": name, "samples": n} for name, n in outcome.rejected_by.items()], console,
                     title="rejected by contract")
    if rows and "samples" in rows[0]:
        _print_policy(console, rows)
    for note in outcome.notes:
        console.print(f"[yellow]note[/]: {note}", highlight=False)
    s = f" --store {store_path}" if store_path != "flywheel-store" else ""
    console.print("next:", highlight=False)
    for cmd in (f'flywheel sql{s} "select family, count(*) from problems group by 1"',
                f'flywheel sql{s} "select family, exec_status, count(*) from samples group by all order by 1"',
                f"flywheel store check{s}",
                f"flywheel run-round{s} --seed N   # a new round: same flags, another seed"):
        console.print(f"  {cmd}", highlight=False, soft_wrap=True)


def _print_policy(console: Console, rows: list[dict]) -> None:
    render_table([{"family": r["family"], "samples": r["samples"], "ran ok": r["policy_ran_ok"],
                   "correct": r["policy_correct"], "accepted": r["policy_accepted"],
                   "pass@1": f"{r['pass_at_1'] or 0:.2f}", "pass@k": f"{r['pass_at_k'] or 0:.2f}"} for r in rows],
                 console, title="policy samples")
