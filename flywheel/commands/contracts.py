"""``flywheel contracts list | run | explain | equivalent``: the contract engine from the command line."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from solvers.errors import ConfigError, FlywheelError

FORMATS = ("table", "json")


def _fmt(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", culprit="--format")
    return fmt


def _load_files(files: list[Path] | None) -> None:
    from contracts.suites import load_contract_file

    for f in files or []:
        load_contract_file(f)


app = typer.Typer(help="Contracts: list, run over stored samples, explain a sample, compare two programs.",
               no_args_is_help=True)


@app.command("list")
def list_(
    contracts: list[Path] = typer.Option(None, "--contracts", help="user contract file(s) to load first"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Every registered contract (stage, severity, cost, version) and every suite."""
    from contracts.api import REGISTRY, load_builtins
    from contracts.suites import SUITES

    _fmt(fmt)
    load_builtins()
    _load_files(contracts)
    rows = [{"name": c.name, "stage": c.stage.value, "severity": c.severity.value, "cost": c.cost,
             "version": c.version, "params": c.params, "source": c.source, "description": c.description}
            for c in sorted(REGISTRY.values(), key=lambda c: (c.stage != "before_execution", c.cost, c.name))]
    suites = {name: factory().names() for name, factory in sorted(SUITES.items())}
    if fmt == "json":
        typer.echo(json.dumps({"contracts": rows, "suites": suites}, indent=2, default=str))
        return
    console = Console()
    render_table([{"name": r["name"], "stage": r["stage"], "severity": r["severity"], "cost": f"{r['cost']:g}",
                   "version": r["version"], "description": r["description"].split(". ")[0].split(": ")[0]}
                  for r in rows], console, title=f"{len(rows)} contracts",
                 priority=["name", "description", "stage", "severity"])
    for name, names in suites.items():
        console.print(f"[bold]suite {name}[/]: {', '.join(names)}")


@app.command("run")
def run(
    suite: str = typer.Option(..., "--suite", help="suite name, .toml suite file, or .py contract file"),
    round_: int | None = typer.Option(None, "--round", help="only samples of this round"),
    store: Path | None = typer.Option(None, "--store", help="store directory"),
    contracts: list[Path] = typer.Option(None, "--contracts", help="user contract file(s) to load first"),
    limit: int | None = typer.Option(None, "--limit", help="at most this many samples"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Re-check stored samples with a suite; new verdicts carry the contracts' current versions."""
    from contracts.engine import run_suite
    from contracts.suites import load_suite

    _fmt(fmt)
    the_suite = load_suite(suite, contract_files=contracts or [])
    st = _open_store(store)
    with st:
        samples, rounds = _stored_samples(st, round_, limit)
        if not samples:
            raise FlywheelError("no executed samples in the store" + (f" for round {round_}" if round_ is not None
                                                                      else ""), culprit=str(st.root))
        report = _run_with_progress(run_suite, the_suite, samples, rounds)
        by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in report.results:
            rnd = rounds[r.sample.sample_id]
            by_round[rnd] += [{**v.model_dump(), "round": rnd} for v in r.verdicts]
            if r.repairs:
                st.write("repairs", rnd, [x.model_dump() for x in r.repairs])
            if r.disputes:
                st.write("disputes", rnd, [d.model_dump() for d in r.disputes])
        for rnd, rows in by_round.items():
            st.write("verdicts", rnd, rows)
    summary = report.summary()
    if fmt == "json":
        typer.echo(json.dumps(summary, indent=2))
        return
    measures = [{"measure": key, "value": summary[key]} for key in ("accepted", "accepted_without_repairs", "repaired",
                                                                    "rejected", "disputed", "contract_errors")]
    measures += [{"measure": f"rejected by {name}", "value": n}
                 for name, n in sorted(summary["rejected_by"].items(), key=lambda kv: -kv[1])]
    render_table(measures, Console(), title=f"suite {the_suite.name}: {summary['samples']} samples")


@app.command("explain")
def explain(
    sample_id: str = typer.Argument(..., help="sample (attempt) id"),
    store: Path | None = typer.Option(None, "--store", help="store directory"),
    fmt: str = typer.Option("table", "--format", help="table | json"),
) -> None:
    """Every verdict of one sample with its evidence, plus its repairs and disputes."""
    _fmt(fmt)
    with _open_store(store) as st:
        verdicts = st.query("SELECT * FROM verdicts WHERE sample_id = $s OR attempt_id = $s "
                            "ORDER BY suite, stage DESC, contract", {"s": sample_id}).to_pylist()
        repairs = st.query("SELECT * FROM repairs WHERE sample_id = $s", {"s": sample_id}).to_pylist()
        disputes = st.query("SELECT * FROM disputes WHERE sample_id = $s", {"s": sample_id}).to_pylist()
    if not verdicts:
        raise FlywheelError("no verdicts for this sample", culprit=f"sample {sample_id}")
    for v in verdicts:
        v["evidence"] = json.loads(v["evidence"] or "{}")
    if fmt == "json":
        typer.echo(json.dumps({"sample_id": sample_id, "verdicts": verdicts, "repairs": repairs,
                               "disputes": disputes}, indent=2, default=str))
        return
    suites = sorted({v["suite"] for v in verdicts})
    console = Console()
    render_table([{"contract": f"{v['contract']}@{v['version']}", "severity": v["severity"], "outcome": v["outcome"],
                   "score": "" if v["score"] is None else f"{v['score']:g}", "message": v["message"],
                   "evidence": json.dumps(v["evidence"], default=str)[:300]} for v in verdicts], console,
                 title=f"sample {sample_id}: {len(verdicts)} verdicts (suite {', '.join(suites)})",
                 priority=["contract", "outcome", "message", "severity", "score"])
    for r in repairs:
        console.print(f"[bold]repair[/] {r['kind']} by {r['contract']}: {r['message']}")
    for d in disputes:
        console.print(f"[bold]dispute[/] {d['kind']} ({d['contract']}): {d['message']}")


@app.command("equivalent")
def equivalent(
    a: Path = typer.Argument(..., help="first program (.py)"),
    b: Path = typer.Argument(..., help="second program (.py)"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Run both programs in the sandbox and compare the models they built (exact -> WL -> semantic)."""
    from contracts.equivalence import compare_models
    from solvers.sandbox import Program, run_batch

    codes = []
    for p in (a, b):
        if not p.is_file():
            raise FlywheelError("program not found", culprit=str(p))
        codes.append(p.read_text())
    execs = list(run_batch([Program(program_id=p.stem, code=c) for p, c in zip((a, b), codes, strict=True)],
                           workers=2))
    models = []
    for p, ex in zip((a, b), execs, strict=True):
        final = ex.final_solve
        if final is None or not final.model_mps:
            raise FlywheelError(f"no model was captured ({ex.status.value}: {ex.error or 'no solve call'})",
                                culprit=str(p))
        models.append(final.model_mps)
    res = compare_models(models[0], models[1])
    out = {"a": str(a), "b": str(b), **res.as_dict(),
           "objectives": [ex.final_solve.objective for ex in execs]}  # type: ignore[union-attr]
    if as_json:
        typer.echo(json.dumps(out, indent=2, default=str))
        return
    verdict = "[green]equivalent[/]" if res.equivalent else "[red]not equivalent[/]"
    console = Console()
    console.print(f"{verdict} (layer: {res.layer}) - {res.reason}")
    render_table([{"evidence": k, "value": json.dumps(v, default=str)[:200]} for k, v in res.evidence.items()],
                 console)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="contracts")


def _open_store(path: Path | None) -> Any:
    from flywheel.store import DEFAULT_PATH, Store

    return Store.open(path or Path(DEFAULT_PATH), create=False)


def _stored_samples(st: Any, round_: int | None, limit: int | None) -> tuple[list[Any], dict[str, int]]:
    """Executed samples from the store (optionally one round), rebuilt as Sample records; sample id -> round."""
    from flywheel.store.rows import load_samples

    where = "WHERE a.round = $r" if round_ is not None else ""
    lim = f"LIMIT {int(limit)}" if limit else ""
    attempts = st.query(f"SELECT a.* FROM attempts a JOIN executions e USING (attempt_id) {where} "
                        f"ORDER BY a.attempt_id {lim}", {"r": round_} if round_ is not None else None).to_pylist()
    if not attempts:
        return [], {}
    samples = load_samples(st, [a["attempt_id"] for a in attempts])
    return samples, {a["attempt_id"]: int(a["round"] or 0) for a in attempts}


def _run_with_progress(run_suite: Any, suite: Any, samples: list[Any], rounds: dict[str, int]) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("contracts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("run", total=2 * len(samples))  # two stages: before and after execution
        return run_suite(suite, samples, progress=lambda n: bar.advance(task, n))
