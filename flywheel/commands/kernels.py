"""``flywheel kernels``: tune (profile -> race backends -> tuning table), bench (ops x backends), peak (matmul
peak for MFU on CPU), list (registered ops and backends)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from solvers.errors import ConfigError

DTYPES = {"bf16": "bfloat16", "fp32": "float32", "bfloat16": "bfloat16", "float32": "float32"}


def _dtype(name: str) -> str:
    if name not in DTYPES:
        raise ConfigError(f"unknown dtype {name!r} (bf16 | fp32)", culprit="--dtype")
    return DTYPES[name]


def _model(spec: str, vocab: int):  # noqa: ANN202
    """A tiny arch name (training.models.TINY_CONFIGS) or a directory with an HF config.json (random init)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from training.models import TINY_CONFIGS, build_model

    if spec in TINY_CONFIGS:
        return build_model(spec, "", vocab, {}, 0)
    path = Path(spec)
    if path.is_dir() and (path / "config.json").is_file():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path), dtype=torch.float32)
    raise ConfigError(f"--model is neither a tiny arch ({', '.join(TINY_CONFIGS)}) nor a directory with config.json",
                      culprit=spec)


def _print(rows: list[dict[str, Any]], columns: list[str], title: str, fmt: str) -> None:
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    render_table(rows, Console(), title=title, columns=columns)


app = typer.Typer(help="Fused kernels: tune a model's table, benchmark backends, measure the matmul peak.")


@app.command("tune")
def tune_cmd(
    model: str = typer.Option(..., "--model", help="tiny arch (qwen3_moe_tiny, ...) or HF config directory"),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | npu"),
    out: Path = typer.Option(Path("runs/kernels/table.json"), "--out", help="tuning table to write"),
    dtype: str = typer.Option("bf16", "--dtype", help="bf16 (autocast) | fp32"),
    rows: int = typer.Option(8, "--rows"),
    seq: int = typer.Option(256, "--seq"),
    vocab: int = typer.Option(1024, "--vocab", help="vocabulary size for tiny archs"),
    repeats: int = typer.Option(5, "--repeats", help="timed runs per backend (median)"),
    op: list[str] = typer.Option([], "--op", help="tune only these ops (repeatable)"),
    candidate: list[Path] = typer.Option([], "--candidate", help="candidate file(s), screened in the sandbox"),
    skip: list[str] = typer.Option([], "--skip-backend", help="backends not to race (e.g. compiled)"),
    llm: str | None = typer.Option(None, "--llm", help="policy spec (openai:MODEL@URL | hf:PATH | vllm:PATH) "
                                   "that writes candidate files into <out>.candidates/"),
    llm_candidates: int = typer.Option(1, "--llm-candidates", min=1, help="candidates asked per op"),
    llm_top: int = typer.Option(3, "--llm-top", min=1, help="ask for the profile's N most expensive ops"),
    llm_temperature: float = typer.Option(0.7, "--llm-temperature", min=0.0),
    config: Path | None = typer.Option(None, "--config", help="TOML config (its [policy] section, for --llm)"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Profile a training step, race every backend per op and shape, keep the fastest correct, write the table."""
    import torch
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from flywheel.config import load_config
    from flywheel.kernel_candidates import LLMWriter, sandbox_runner
    from kernels import registry
    from kernels.tuner import tune
    from training.device import get_device

    dev = get_device(device)
    for name in op:
        registry.get(name)
    for c in candidate:
        if not c.is_file():
            raise ConfigError("candidate file not found", culprit=str(c))
    writer = None
    if llm:
        from flywheel.policies.backends.base import make_backend

        settings = load_config(config).policy
        backend = make_backend(llm, settings)  # a bad spec fails here, before the profile
        writer = LLMWriter(llm, out.parent / f"{out.name}.candidates", k=llm_candidates, top=llm_top,
                           temperature=llm_temperature, settings=settings, backend=backend)
    m = _model(model, vocab).to(dev.torch_device(0))
    g = torch.Generator().manual_seed(0)
    batch = torch.randint(0, m.config.vocab_size, (rows, seq), generator=g).to(dev.torch_device(0))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as prog:
        task = prog.add_task("tuning")
        table, results, steps = tune(m, batch, _dtype(dtype), device, repeats=repeats, ops=set(op) or None,
                                     out=out, candidate_files=[str(c) for c in candidate], skip=set(skip),
                                     progress=lambda s: prog.update(task, description=s), llm=writer,
                                 runner=sandbox_runner() if candidate or writer else None)
    out_rows = []
    for r in results:
        ref = next(c for c in r.candidates if c.backend == "reference")
        for c in r.candidates:
            out_rows.append({"op": r.op, "shape": r.shape, "dtype": r.dtype, "profile_ms": r.profile_ms,
                             "backend": c.backend, "ok": c.ok, "ms": c.ms, "speedup": ref.ms / c.ms if c.ok
                             else None, "max_error": c.max_error, "winner": c.backend == r.winner,
                             "detail": c.detail})
    llm_meta = table.meta.get("llm")
    if fmt == "json":
        typer.echo(json.dumps({"table": str(out), "candidates": out_rows, **steps,
                               **({"llm": llm_meta} if llm_meta else {})}, indent=2, default=str))
        return
    _print(out_rows, ["op", "shape", "dtype", "backend", "ok", "ms", "speedup", "winner", "detail"],
           "candidates (fastest correct wins)", fmt)
    if llm_meta:
        typer.echo(f"LLM {llm}: {len(llm_meta['files'])} candidate file(s) written to {out}.candidates, "
                   f"{len(llm_meta['rejected'])} repl(ies) rejected; {llm_meta['requests_sent']} request(s) "
                   f"sent, {llm_meta['cache_hits']} cached")
    typer.echo(f"step time: before {steps['before_s']:.3f} s, after {steps['after_s']:.3f} s "
               f"({steps['before_s'] / steps['after_s']:.2f}x); table written to {out}")


@app.command("bench")
def bench_cmd(
    op: list[str] = typer.Option([], "--op", help="ops to benchmark (default: all)"),
    dtype: str = typer.Option("fp32", "--dtype", help="bf16 (autocast) | fp32"),
    scale: int = typer.Option(512, "--scale", help="case size (tokens / 4 for most ops)"),
    repeats: int = typer.Option(3, "--repeats"),
    memory: bool = typer.Option(True, "--memory/--no-memory", help="peak memory per backend (child processes)"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Ops x backends: forward + backward time and peak memory, relative to reference."""
    from kernels import registry
    from kernels.benchmark import CASES, bench

    ops = op or list(CASES)
    for name in ops:
        registry.get(name)
    rows = bench(ops, _dtype(dtype), scale, repeats, memory)
    _print(rows, ["op", "backend", "ms", "time_vs_ref", "peak_mb", "memory_vs_ref", "error"],
           f"kernels bench ({dtype}, scale {scale})", fmt)


@app.command("peak")
def peak_cmd(fmt: str = typer.Option("table", "--format", help="table | json")) -> None:
    """Matmul peak of this CPU per dtype and size (the trainer's MFU denominator uses the same measurement)."""
    from kernels.peak import measure

    _print(measure(), ["dtype", "size", "gflops"], "CPU matmul peak", fmt)


@app.command("list")
def list_cmd(fmt: str = typer.Option("table", "--format", help="table | json")) -> None:
    """Registered ops and backends, with whether each can run here."""
    from kernels import registry

    rows = [{"op": b.op, "backend": b.name, "devices": ",".join(b.devices), "available": b.available(),
             "note": b.note} for op in registry.op_names() for b in registry.backends(op)]
    _print(rows, ["op", "backend", "devices", "available", "note"], "kernel backends", fmt)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="kernels")
