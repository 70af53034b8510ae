"""``flywheel generators list | show``: the registered generator families and what one of their problems reads like."""

from __future__ import annotations

import typer
from rich.console import Console

from flywheel.commands.tables import check_format, print_table

app = typer.Typer(help="Generator families: list them (class, techniques, sectors), show one problem.",
                  no_args_is_help=True)


@app.command("list")
def list_(
    technique: str | None = typer.Option(None, "--technique", help="only families exercising this technique"),
    fmt: str = typer.Option("table", "--format", help="table | json | csv"),
) -> None:
    """Every registered family: problem class, modelling techniques, application sectors, phrasings."""
    from flywheel.generators._phrasing import TECHNIQUES
    from flywheel.generators.base import family_names, get_family
    from solvers.errors import unknown_name

    check_format(fmt)
    if technique is not None and technique not in TECHNIQUES:
        raise unknown_name("technique", technique, list(TECHNIQUES))
    rows = []
    for name in family_names():
        fam = get_family(name)
        if technique is not None and technique not in fam.techniques:
            continue
        rows.append({"name": name, "class": fam.problem_class, "techniques": list(fam.techniques),
                     "sectors": sorted(set(fam.sectors.values())), "domains": list(fam.domains),
                     "templates": fam.n_templates, "version": fam.version})
    if fmt != "table":
        print_table(rows, fmt=fmt)
        return
    console = Console()
    print_table([{**r, "techniques": ", ".join(r["techniques"]) or "-"} for r in rows], console=console,
                title=f"{len(rows)} generator families", columns=["name", "class", "techniques", "templates"],
                priority=["name", "class", "techniques"])
    counts = {t: sum(t in r["techniques"] for r in rows) for t in TECHNIQUES}
    sectors = sorted({s for r in rows for s in r["sectors"]})
    console.print("families per technique: " + ", ".join(f"{t} {n}" for t, n in counts.items() if n), highlight=False)
    console.print(f"sectors ({len(sectors)}): {', '.join(sectors)}; --format json has each family's", highlight=False)


@app.command("show")
def show(
    family: str = typer.Argument(..., help="family name (see `flywheel generators list`)"),
    seed: int = typer.Option(0, "--seed"),
    difficulty: int = typer.Option(1, "--difficulty", help="1..5"),
    infeasible: bool = typer.Option(False, "--infeasible", help="the deliberately infeasible variant"),
    fmt: str = typer.Option("text", "--format", help="text | json (the full problem record)"),
) -> None:
    """One problem of a family: its question, techniques and measured size (``--format json``: the record)."""
    from flywheel.generators.base import generate_problem, get_family

    check_format(fmt, ("text", "json"))
    problem = generate_problem(family, seed, difficulty, 1.0 if infeasible else 0.0)
    if fmt == "json":
        typer.echo(problem.model_dump_json(indent=2))
        return
    console = Console()
    console.print(f"[bold]{problem.family}[/] seed {seed}, difficulty {difficulty}, {problem.template_id}, "
                  f"domain {problem.domain!r}; {get_family(family).problem_class}; techniques: "
                  f"{', '.join(problem.techniques) or '-'}", highlight=False)
    console.print(problem.question, markup=False, highlight=False)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="generators")
