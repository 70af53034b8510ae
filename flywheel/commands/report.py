"""``flywheel report``: an HTML page with PNG plots of rounds, training and evaluation."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        store: Path = typer.Option(Path("flywheel-store"), "--store", help="Store directory."),
        out: Path = typer.Option(Path("reports/latest"), "--out", help="Folder for index.html and the PNGs."),
        runs: list[Path] = typer.Option([Path("runs")], "--runs", help="Training run folders (metrics.jsonl)."),
        evals: list[Path] = typer.Option([], "--evals", help="Evaluation output folders (summary.json)."),
    ) -> None:
        """Render rounds (pass rates, failure taxonomy), training (loss, MFU) and evaluation (strict vs lenient)."""
        from flywheel.report import build_report

        page = build_report(out, store=store, runs=runs, evals=evals)
        typer.echo(f"wrote {page}")
