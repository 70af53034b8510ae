"""The ``flywheel`` command line. Each ``flywheel/commands/<noun>.py`` registers its own commands.

User errors (``FlywheelError``) print one line and exit 2; anything else is an internal fault (exit 1), with
the traceback only under ``--debug``.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer
from rich.console import Console

from solvers.errors import FlywheelError

# Command modules, in the order their commands appear in --help. Each defines register(app: typer.Typer).
COMMAND_MODULES = ("round", "sql", "generators", "sandbox", "contracts", "store", "datasets", "export", "policy", "models", "train", "kernels",
                   "evaluate", "report", "config")

app = typer.Typer(
    name="flywheel",
    help="or-flywheel: solver-verified OR data, policies, contracts, training and evaluation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err_console = Console(stderr=True)


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors.")) -> None:
    if debug:
        os.environ["FLYWHEEL_DEBUG"] = "1"


_registered: list[str] = []


def _register(names: tuple[str, ...]) -> None:
    for name in names:
        if name not in _registered:
            _registered.append(name)
            importlib.import_module(f"flywheel.commands.{name}").register(app)


def _sandbox_only() -> bool:
    """`flywheel sandbox ...` needs only its own module: a cold `sandbox serve` is then ready sooner (every module
    together imports duckdb, pyarrow, numpy, ... ~1 s)."""
    return sys.argv[1:2] == ["sandbox"] and os.path.basename(sys.argv[0]) == "flywheel"


def _register_all() -> None:
    _register(("sandbox",) if _sandbox_only() else COMMAND_MODULES)


_register_all()


def main() -> None:
    """Console-script entry point."""
    debug = "--debug" in sys.argv or os.environ.get("FLYWHEEL_DEBUG") == "1"
    if not _sandbox_only():
        _register(COMMAND_MODULES)  # this process first imported the CLI for a `sandbox` command (e.g. in tests)
    try:
        app(standalone_mode=False)
    except FlywheelError as exc:
        if debug:
            err_console.print_exception()
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:
        # Typer vendors its own click (typer._click), so usage errors are recognised by their class hierarchy
        # rather than by importing one particular click.
        names = {cls.__name__ for cls in type(exc).__mro__}
        if "ClickException" in names:
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        if "Exit" in names:
            sys.exit(getattr(exc, "exit_code", 0))
        if debug:
            err_console.print_exception()
        err_console.print(f"[bold red]internal error:[/] {type(exc).__name__}: {exc} (run with --debug)")
        sys.exit(1)

if __name__ == "__main__":
    main()
