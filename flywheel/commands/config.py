"""``flywheel config show``: every setting with its resolved value."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from flywheel.config import fixed_settings, load_config, show_config


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(help="Inspect configuration.", no_args_is_help=True)

    @config_app.command("show")
    def show(
        config: Path | None = typer.Option(None, "--config", help="TOML file to resolve."),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Print every setting with its resolved value (defaults included), then what is fixed (solver APIs,
    tolerances, the sandbox's own defaults)."""
        data = {**show_config(load_config(config)), "fixed": fixed_settings()}
        if fmt == "json":
            typer.echo(json.dumps(data, indent=2))
            return
        render_table([{"key": f"{section}.{key}", "value": json.dumps(value)} for section, values in data.items()
                      for key, value in values.items()], Console())

    app.add_typer(config_app, name="config")
