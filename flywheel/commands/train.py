"""``flywheel train``: CPT / SFT / progressive SFT on exported shards, one process or N via torchrun (FSDP2);
``flywheel train select``: CPT checkpoint selection by proxy SFT."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from flywheel.commands.tables import render_table
from solvers.errors import ConfigError


def _overrides(data: list[str], init: str | None, sets: list[str]) -> dict[str, Any]:
    over: dict[str, Any] = {}
    if data:
        over["data.sources"] = [{"path": d} for d in data]
    if init:
        over["model.path"] = init
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}", culprit="--set")
        try:
            over[key.strip()] = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            over[key.strip()] = raw
    return over


def _print_summary(summary: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        typer.echo(json.dumps(summary, indent=2))
        return
    render_table([{"metric": key, "value": f"{value:.4g}" if isinstance(value, float) else value}
                  for key, value in summary.items()], Console(), title="training summary")


def register(app: typer.Typer) -> None:
    train_app = typer.Typer(help="Train on exported shards (CPT, SFT, progressive SFT) and select CPT checkpoints.",
                            invoke_without_command=True)

    @train_app.callback()
    def train(
        ctx: typer.Context,
        recipe: str = typer.Option(None, "--recipe", help="cpt | sft | progressive | FILE.toml"),
        nproc: int = typer.Option(1, "--nproc", min=1, help="processes (torchrun + FSDP2 when > 1)"),
        device: str = typer.Option("cpu", "--device", help="cpu | cuda | npu"),
        resume: str | None = typer.Option(None, "--resume", help="run or checkpoint directory to resume from"),
        data: list[str] = typer.Option([], "--data", help="shard directory (repeatable); replaces data.sources"),
        init: str | None = typer.Option(None, "--init", help="HF checkpoint to start from (model.path)"),
        out: Path | None = typer.Option(None, "--out", help="run folder; default runs/<name>/"),
        sets: list[str] = typer.Option([], "--set", help="override a recipe key: --set train.steps=50"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Train a recipe; writes config.json, metrics.jsonl, curves.png, checkpoints/step-N and final/."""
        if ctx.invoked_subcommand is not None:
            return
        if recipe is None:
            raise ConfigError("missing --recipe (cpt | sft | progressive | FILE.toml)", culprit="--recipe")
        from training.config import load_recipe
        from training.launch import launch

        config = load_recipe(recipe, _overrides(data, init, sets))
        run_dir = out or Path("runs") / config.name
        total = sum(s.steps for s in config.progressive.stages) if config.kind == "progressive" else config.train.steps
        if nproc > 1:
            summary = launch(config, run_dir, device, nproc, resume)
        else:
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                          TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=fmt == "json") as bar:
                task = bar.add_task(config.name, total=total, info="")

                def progress(record: dict[str, Any]) -> None:
                    if "budget_plan" in record or "budget_stop" in record:  # [train] time_budget_s cut the run
                        bar.update(task, total=record.get("budget_stop") or record["budget_plan"]["total_steps"])
                    plan = record.get("budget_plan", {})
                    if "fit_steps" in plan:  # ... or would have, below [train] min_steps
                        typer.echo(f"time budget: {plan['fit_steps']} steps fit {plan['budget_s']:.0f} s on this "
                                   f"machine ({plan['step_s']:.1f} s a step); training to min_steps = "
                                   f"{plan['min_steps']}, past the budget", err=True)
                    bar.update(task, completed=record["step"],
                               info=f"loss {record['loss']:.3f}  {record['tokens_per_s']:.0f} tok/s")

                summary = launch(config, run_dir, device, 1, resume, progress)
        _print_summary(summary, fmt)

    @train_app.command("list")
    def list_(fmt: str = typer.Option("table", "--format", help="table | json")) -> None:
        """Built-in recipes, tiny model configs and devices."""
        from training.config import builtin_recipes
        from training.device import DEVICES
        from training.models import TINY_CONFIGS

        data = {"recipes": builtin_recipes(), "models": sorted(TINY_CONFIGS),
                "devices": {k: ("executed here" if v.executed_here else "not executed here") for k, v in DEVICES.items()}}
        if fmt == "json":
            typer.echo(json.dumps(data, indent=2))
            return
        render_table([{"kind": "recipes", "names": ", ".join(data["recipes"])},
                      {"kind": "models", "names": ", ".join(data["models"])},
                      {"kind": "devices", "names": ", ".join(f"{k} ({v})" for k, v in data["devices"].items())}],
                     Console(), title="training")

    @train_app.command("select")
    def select(
        cpt_run: Path = typer.Argument(..., help="CPT run folder (its checkpoints/step-N are the candidates)"),
        sft_data: str = typer.Option(..., "--sft-data", help="SFT shard directory for the proxy SFT"),
        held_out: int = typer.Option(20, "--held-out", help="held-out generated problems for Pass@1"),
        steps: int = typer.Option(30, "--steps", help="proxy SFT steps per checkpoint"),
        seed: int = typer.Option(777, "--seed", help="seed of the held-out problems (use one unseen in training)"),
        out: Path | None = typer.Option(None, "--out", help="folder for proxy runs; default <cpt_run>/selection"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """For each CPT checkpoint: short SFT, then Pass@1 on held-out generated problems; print the table."""
        from flywheel.evaluate.selection import select_checkpoint

        result = select_checkpoint(cpt_run, sft_data, held_out, steps, seed, out or cpt_run / "selection")
        if fmt == "json":
            typer.echo(json.dumps(result, indent=2))
            return
        render_table([{"checkpoint": row["checkpoint"] + (" *" if row["checkpoint"] == result["best"] else ""),
                       "SFT val loss": f"{row['val_loss']:.4f}", "pass@1": f"{row['pass_at_1']:.3f}",
                       "passed": f"{row['passed']}/{row['items']}"} for row in result["rows"]], Console(),
                     title="CPT checkpoint selection (val loss: proxy SFT)")

    app.add_typer(train_app, name="train")
