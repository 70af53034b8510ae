"""``flywheel sandbox run FILE.py``, ``flywheel sandbox batch IN.jsonl --out OUT.jsonl`` and ``sandbox serve``."""

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
from solvers.sandbox.wire import execution_json  # the shared JSON shape (also the server's)


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
        server: str | None = typer.Option(None, "--server", help="URL of a running `flywheel sandbox serve` "
                                          "(token: FLYWHEEL_SANDBOX_TOKEN)."),
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
        if server is not None:
            config = config.model_copy(update={"backend": "server", "server_url": server})
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

    @sandbox_app.command("doctor")
    def doctor(
        fmt: str = typer.Option("table", "--format", help="table | json"),
        run: bool = typer.Option(True, "--run/--no-run", help="Also run one program and show its isolation."),
    ) -> None:
        """Which isolation layers are active on this host, and why any is missing."""
        from solvers.sandbox.doctor import diagnose

        if fmt not in ("table", "json"):
            raise SandboxError(f"unknown format {fmt!r}; known: table, json", culprit="--format")
        data = diagnose(run_program=run)
        if run:
            # User contract files and repairs run in their own jail (contracts.jail), not in a sandbox slot.
            from contracts import blind

            try:
                data["contract_jail"] = blind.isolation("blind")
            finally:
                blind.shutdown()
        if fmt == "json":
            typer.echo(json.dumps(data, indent=2))
            return
        console = Console()
        render_table([{"layer": layer["layer"], "on": "yes" if layer["active"] else "NO", "detail": layer["detail"]}
                      for layer in data["layers"]], console, title="sandbox isolation on this host",
                     priority=("layer", "on", "detail"))
        apis = data.get("solver_apis", [])
        console.print("solve calls captured: " + ", ".join(f"{a['api']} {a['version']}".strip() for a in apis
                                                            if a["installed"]), highlight=False)
        missing = [a["api"] for a in apis if not a["installed"]]
        if missing:
            console.print("hooked but not installed here: " + ", ".join(missing), highlight=False)
        if "isolation" in data:
            console.print(f"a program here runs with: {data['isolation']} ({data['probe_status']})", highlight=False)
        if "contract_jail" in data:
            console.print(f"user contracts and repairs run with: {data['contract_jail']}", highlight=False)

    _register_serve(sandbox_app)
    app.add_typer(sandbox_app, name="sandbox")


def _register_serve(sandbox_app: typer.Typer) -> None:
    @sandbox_app.command("serve")
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (beyond loopback: a token is required)."),
        port: int = typer.Option(8790, "--port", help="TCP port."),
        workers: int | None = typer.Option(None, "--workers", help="Programs at once (default: the cores)."),
        token_file: Path | None = typer.Option(None, "--token-file", help="Bearer token file (default: "
                                               "FLYWHEEL_SANDBOX_TOKEN)."),
        max_queue: int = typer.Option(256, "--max-queue", help="Programs that may wait beyond those running; "
                                      "more: 429 + Retry-After."),
        max_timeout: float = typer.Option(60.0, "--max-timeout", help="Cap on any request's timeout (s)."),
        timeout: float | None = typer.Option(None, "--timeout", help="Timeout of a request that sets none (s; "
                                             "default: the sandbox's default timeout)."),
        isolation: str | None = typer.Option(None, "--isolation", help="auto | bwrap | process"),
        warm: str = typer.Option("default", "--warm", help="Flavours to start in the background once ready: "
                                 "'default' (each solver library), 'none', or comma-separated preload modules."),
    ) -> None:
        """Serve the sandbox over HTTP (native API, SandboxFusion's /run_code, /metrics); SIGTERM drains."""
        from solvers.sandbox import SandboxConfig, default_workers
        from solvers.sandbox.program import DEFAULT_TIMEOUT_S
        from solvers.sandbox.service import ServeSettings, default_warm, read_token
        from solvers.sandbox.service import serve as run_server

        kwargs = {} if isolation is None else {"isolation": _config(None, isolation, []).isolation}
        flavours = default_warm() if warm == "default" else () if warm == "none" else tuple(
            m.strip() for m in warm.split(",") if m.strip())
        settings = ServeSettings(host=host, port=port, workers=workers or default_workers(),
                                 token=read_token(str(token_file) if token_file else None), max_queue=max_queue,
                                 max_timeout_s=max_timeout, default_timeout_s=min(timeout or DEFAULT_TIMEOUT_S, max_timeout),
                                 config=SandboxConfig(**kwargs), warm=flavours)
        run_server(settings)
