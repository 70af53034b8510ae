"""``flywheel sandbox run FILE.py`` and ``flywheel sandbox batch IN.jsonl --out OUT.jsonl``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from solvers.errors import SandboxError
from solvers.records import Execution


def execution_json(execution: Execution, with_mps: bool = False) -> dict[str, Any]:
    """The JSON shape of one execution (shared by ``run --json`` and every ``batch`` output line)."""
    data = execution.model_dump(mode="json")
    data["objective"] = execution.objective
    if not with_mps:
        for solve in data["solves"]:
            solve["model_mps"] = None if solve["model_mps"] is None else f"<{len(solve['model_mps'])} chars>"
    return data


def _read_files(data_dir: Path | None) -> dict[str, str]:
    if data_dir is None:
        return {}
    if not data_dir.is_dir():
        raise SandboxError("not a directory", culprit=str(data_dir))
    files = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            try:
                files[str(path.relative_to(data_dir))] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise SandboxError("data files must be UTF-8 text", culprit=str(path)) from exc
    return files


def _config(timeout: float | None, isolation: str | None, codes: list[str], backend: str = "local",
            address: str | None = None) -> Any:
    from solvers.sandbox import SandboxConfig, preload_for

    if backend not in ("local", "ray"):
        raise SandboxError(f"unknown backend {backend!r}; known: local, ray", culprit="--backend")
    kwargs: dict[str, Any] = {"preload": preload_for(codes), "backend": backend, "ray_address": address}
    if timeout is not None:
        kwargs["timeout_s"] = timeout
    if isolation is not None:
        if isolation not in ("auto", "bwrap", "process"):
            raise SandboxError(f"unknown isolation {isolation!r}; known: auto, bwrap, process", culprit="--isolation")
        kwargs["isolation"] = isolation
    return SandboxConfig(**kwargs)


def register(app: typer.Typer) -> None:
    sandbox_app = typer.Typer(help="Run programs in the isolated solver sandbox.", no_args_is_help=True)

    @sandbox_app.command("run")
    def run(
        file: Path = typer.Argument(..., help="Python program to run."),
        entry: str | None = typer.Option(None, "--entry", help="Function to call after the module ran."),
        args: str | None = typer.Option(None, "--args", help="JSON inputs for --entry (list, object or value)."),
        data: Path | None = typer.Option(None, "--data", help="Directory whose files are placed in the workdir."),
        timeout: float | None = typer.Option(None, "--timeout", help="Wall-clock limit in seconds."),
        isolation: str | None = typer.Option(None, "--isolation", help="auto | bwrap | process"),
        as_json: bool = typer.Option(False, "--json", help="Print the execution as JSON."),
        with_mps: bool = typer.Option(False, "--mps", help="Include the captured MPS text in the JSON."),
    ) -> None:
        """Execute one program and print what its solver calls really did."""
        from solvers.sandbox import Program, run_program

        try:
            code = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SandboxError(f"cannot read program: {exc}", culprit=str(file)) from exc
        try:
            parsed_args = json.loads(args) if args is not None else None
        except ValueError as exc:
            raise SandboxError(f"--args is not JSON: {exc}", culprit="--args") from exc
        program = Program(program_id=file.name, code=code, entry=entry, args=parsed_args, files=_read_files(data))
        execution = run_program(program, _config(timeout, isolation, [code]))
        if as_json:
            typer.echo(json.dumps(execution_json(execution, with_mps), indent=2))
            return
        console = Console()
        console.print(f"[bold]{execution.status}[/]  {execution.error}", highlight=False)
        render_table([{"api": s.api, "solver": f"{s.solver} {s.solver_version}", "status": str(s.status),
                       "objective": str(s.objective), "bound": str(s.bound), "vars": s.n_vars, "int": s.n_int_vars,
                       "cons": s.n_constraints, "time s": f"{s.solve_time_s:.3f}"} for s in execution.solves],
                     console, priority=["api", "status", "objective", "solver", "time s", "bound"])
        console.print(f"wall {execution.wall_s:.3f} s  cpu {execution.cpu_s:.3f} s  rss {execution.max_rss_mb:.0f} MB"
                      f"  isolation {execution.isolation}", highlight=False)

    @sandbox_app.command("batch")
    def batch(
        infile: Path = typer.Argument(..., help="JSONL: id, code, optional entry, args, files."),
        out: Path = typer.Option(..., "--out", help="JSONL output: id plus the execution JSON."),
        workers: int | None = typer.Option(None, "--workers", help="Warm workers (default: the cores)."),
        timeout: float | None = typer.Option(None, "--timeout", help="Wall-clock limit per program."),
        isolation: str | None = typer.Option(None, "--isolation", help="auto | bwrap | process"),
        fmt: str = typer.Option("table", "--format", help="table | json (the summary)"),
        backend: str = typer.Option("local", "--backend", help="local | ray (fan out across a Ray cluster)"),
        address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: RAY_ADDRESS "
                                           "or a local Ray instance)."),
    ) -> None:
        """Run every program of a JSONL file; output lines keep the input order."""
        from solvers.sandbox import Program, run_batch

        if not infile.is_file():
            raise SandboxError("no such file", culprit=str(infile))
        if workers is not None and workers <= 0:
            raise SandboxError("must be positive", culprit="--workers")
        lines = [line for line in infile.read_text(encoding="utf-8").splitlines() if line.strip()]
        programs = []
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                programs.append(Program(program_id=str(row["id"]), code=row["code"], entry=row.get("entry"),
                                        args=row.get("args"), files=row.get("files") or {}))
            except (ValueError, KeyError, TypeError) as exc:
                raise SandboxError(f"bad batch line: {exc}", culprit=f"{infile}:{n}") from exc
        counts: Counter[str] = Counter()
        config = _config(timeout, isolation, [p.code for p in programs], backend, address)
        if backend == "ray":
            from solvers.sandbox.ray_backend import require_ray

            require_ray()  # a missing extra is one clear line before any output file is opened

        def executions() -> Iterator[Execution]:
            yield from run_batch(programs, config, workers=workers, progress=True)

        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as fh:
            for execution in executions():
                counts[str(execution.status)] += 1
                fh.write(json.dumps({"id": execution.program_id} | execution_json(execution)) + "\n")
        if fmt == "json":
            typer.echo(json.dumps(dict(counts)))
            return
        render_table([*({"status": status, "programs": n} for status, n in counts.most_common()),
                      {"status": "total", "programs": sum(counts.values())}], Console())

    app.add_typer(sandbox_app, name="sandbox")
