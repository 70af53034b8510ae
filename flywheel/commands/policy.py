"""``flywheel policy check|list|sample|construct``: talk to a policy (LLM) directly.

``check`` sends one uncached request and prints the latency and the reply, to test a server before a round.
``sample`` writes K attempts per problem to JSONL (the round does the same, into the store); ``construct`` runs
backtranslation / paraphrase / mutation and writes the accepted problems.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from solvers.errors import ConfigError

console = Console()


def _settings(config: Path | None, **overrides: Any) -> Any:
    from flywheel.config import load_config

    return load_config(config, {"policy": overrides}).policy


def _problems(problems_file: Path | None, families: str, n: int, seed: int, difficulty: int | None) -> list[Any]:
    from flywheel.generators.base import derive_seed, family_names, generate_problem
    from flywheel.policies import load_problems_file

    if problems_file is not None:
        return load_problems_file(problems_file)[:n]
    names = [f for f in families.split(",") if f] or family_names()
    return [generate_problem(names[i % len(names)], derive_seed(seed, i), difficulty) for i in range(n)]


def _print(rows: list[dict[str, Any]], fmt: str, title: str) -> None:
    if fmt == "json":
        console.print_json(json.dumps(rows, default=str))
        return
    render_table(rows, console, title=title)


app = typer.Typer(help="Policies (LLMs): check a server, sample attempts, construct data.",
               no_args_is_help=True)


@app.command("check")
def check(
    spec: str = typer.Argument(..., help="openai:MODEL@URL | hf:PATH | vllm:PATH"),
    prompt: str = typer.Option("Write a Python program that prints the sum of 2 and 3.", help="user message"),
    max_tokens: int = typer.Option(128, help="completion token limit"),
    config: Path | None = typer.Option(None, help="TOML config (the [policy] section)"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Send one request (never cached) and print latency and the reply."""
    from flywheel.policies import make_backend
    from flywheel.policies.backends.base import ChatRequest, Completion

    backend = make_backend(spec, _settings(config, max_tokens=max_tokens))
    req = ChatRequest(key="check", messages=({"role": "user", "content": prompt},), temperature=0.0, top_p=1.0,
                      max_tokens=max_tokens, seed=0)
    got: dict[str, Any] = {}
    t0 = time.perf_counter()
    asyncio.run(backend.run([req], lambda _r, o: got.update(outcome=o)))
    wall = time.perf_counter() - t0
    o = got["outcome"]
    row = {"spec": spec, "ok": isinstance(o, Completion), "wall_s": round(wall, 3), "tries": o.tries}
    if isinstance(o, Completion):
        row |= {"finish_reason": o.finish_reason, "usage": o.usage, "reply": o.text}
    else:
        row |= {"kind": o.kind, "http_status": o.http_status, "message": o.message}
    if fmt == "json":
        console.print_json(json.dumps(row))
    else:
        for k, v in row.items():
            console.print(f"[bold]{k}[/bold]: {v}")
    if not row["ok"]:
        raise typer.Exit(1)


@app.command("list")
def list_(fmt: str = typer.Option("table", "--format", help="table | json")) -> None:
    """Registered backend schemes and prompt templates (id and hash)."""
    from flywheel.policies import backend_schemes
    from flywheel.policies.prompts import templates

    rows = [{"kind": "backend", "name": s, "hash": ""} for s in backend_schemes()]
    rows += [{"kind": "template", "name": k, "hash": t.hash} for k, t in sorted(templates().items()) if "/" in k]
    _print(rows, fmt, "policy backends and prompt templates")


@app.command("sample")
def sample(
    spec: str = typer.Argument(...),
    out: Path = typer.Option(..., help="attempts JSONL to write"),
    problems_file: Path | None = typer.Option(None, help="JSONL with id, question, answer"),
    families: str = typer.Option("", help="comma-separated families (generated problems)"),
    n: int = typer.Option(4, min=1, help="problems"),
    seed: int = typer.Option(0, min=0),
    difficulty: int | None = typer.Option(None, min=1, max=5),
    samples: int = typer.Option(1, min=1, help="samples per problem"),
    temperature: float = typer.Option(0.7, min=0.0),
    api: str = typer.Option("gurobipy", help="target solver API"),
    cache: Path = typer.Option(Path("flywheel-store"), help="directory of the response cache"),
    config: Path | None = typer.Option(None),
    fmt: str = typer.Option("table", "--format"),
) -> None:
    """K samples per problem through the response cache; attempts and infrastructure rows to JSONL."""
    from flywheel.policies import generate_attempts

    problems = _problems(problems_file, families, n, seed, difficulty)
    run = generate_attempts(problems, spec, samples=samples, temperature=temperature, api=api, round_id=0,
                            cache_dir=cache, settings=_settings(config))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for a in run.attempts:
            fh.write(json.dumps({"attempt": a.model_dump(mode="json"), **run.details[a.attempt_id]}) + "\n")
        for e in run.infra_errors:
            fh.write(json.dumps({"infra_error": e}) + "\n")
    _print([run.counters], fmt, f"policy sample -> {out}")


@app.command("construct")
def construct(
    spec: str = typer.Argument(...),
    kind: str = typer.Option("backtranslation", help="backtranslation | paraphrase | mutation"),
    out: Path = typer.Option(..., help="JSONL of accepted problems"),
    problems_file: Path | None = typer.Option(None, help="JSONL problems (paraphrase only: they have no IR)"),
    families: str = typer.Option(""),
    n: int = typer.Option(4, min=1),
    seed: int = typer.Option(0, min=0),
    difficulty: int | None = typer.Option(None, min=1, max=5),
    temperature: float = typer.Option(0.7, min=0.0),
    cache: Path = typer.Option(Path("flywheel-store")),
    config: Path | None = typer.Option(None),
    fmt: str = typer.Option("table", "--format"),
) -> None:
    """AI-assisted construction; a story is kept only when numeric coverage holds."""
    import numpy as np

    from flywheel.policies import construct as c

    settings = _settings(config)
    problems = _problems(problems_file, families, n, seed, difficulty)

    def retell(ps: Any) -> Any:
        return c.paraphrase(ps, spec, cache_dir=cache, settings=settings, temperature=temperature)

    runners = {
        "backtranslation": lambda: c.backtranslate(problems, spec, cache_dir=cache, settings=settings,
                                                   temperature=temperature),
        "paraphrase": lambda: retell(problems),
        "mutation": lambda: c.mutate(problems, np.random.default_rng(seed), retell=retell),
    }
    if kind not in runners:
        raise ConfigError(f"unknown kind {kind!r}; known: {', '.join(runners)}", culprit="--kind")
    run = runners[kind]()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for p in run.accepted:
            fh.write(p.canonical_json() + "\n")
    rows = [{"source": r.source_id, "accepted": r.accepted, "coverage": round(r.coverage, 3),
             "critic_ok": r.critic_ok, "reason": r.reason[:80]} for r in run.results]
    _print(rows, fmt, f"policy construct {kind}")
    _print([c.summary(run)], fmt, "summary")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="policy")
