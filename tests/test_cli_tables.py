"""Every CLI table is readable at 80 columns: rendered with Rich's Console(width=...) at 80 and 120.

Readable means: no line wider than the terminal, no cell or header cut to a stub ("ass…"), every header shown
whole, and a note naming the columns that were dropped (which --format json / csv still carry).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from cli_here import flywheel_here
from rich.console import Console

from flywheel.commands.export import stats_tables
from flywheel.commands.tables import fit_columns, render_table

WIDTHS = (80, 120)
FAMILIES = ["production_planning", "facility_location", "parallel_machine", "shift_staffing", "tsp"]


def _stats_data() -> dict:
    """A `compute_stats` result shaped like a real multi-policy store: long names, many columns."""
    pass_rates, failures, boundary = [], [], []
    for i, fam in enumerate(FAMILIES):
        for policy in ("reference", "openai:qwen2.5-coder-7b-instruct@http://127.0.0.1:8080"):
            pass_rates.append({"family": fam, "difficulty": 1 + i % 5, "policy": policy, "round": 12, "samples": 1234,
                               "accepted": 1000 + i, "pass_rate": 0.8123, "objective_match_rate": 0.91,
                               "exec_ok_rate": 0.99, "median_wall_s": 0.3012, "median_solve_s": 0.0456})
            boundary.append({"policy": policy, "family": fam, "attempts": 1234, "pass": 1000, "code": 100,
                             "solver": 50, "formulation": 80, "infra": 4, "pass_rate": 0.81,
                             "top_failures": "objective_mismatch 60, syntax_error 40, solver_timeout 12"})
        failures.append({"family": fam, "reason": "assertion_failed_in_reference_program", "count": 12,
                         "share_of_family": 0.0123})
    return {"pass_rates": pass_rates, "failures": failures, "capability_boundary": boundary}


def _render(rows: list[dict], width: int, **kw) -> tuple[str, list[str]]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    dropped = render_table(rows, console, **kw)
    return console.export_text(), dropped


def _assert_readable(text: str, width: int, headers: list[str]) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text  # Rich's squeeze cuts cells to "ass…": that must never happen
    header_block = "\n".join(line for line in lines[:6])
    for h in headers:  # every header shown whole (a header may wrap between its words, never inside one)
        for word in h.split():
            assert re.search(rf"(?<![\w.@]){re.escape(word)}(?![\w.@])", header_block), (h, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_stats_tables_fit(width: int) -> None:
    data = _stats_data()
    all_dropped = {}
    for title, rows, priority in stats_tables(data):
        text, dropped = _render(rows, width, title=title, priority=priority)
        kept = [c for c in rows[0] if c not in dropped]
        _assert_readable(text, width, kept)
        assert kept[:2] == priority[:2]  # the key columns are never the ones dropped
        if dropped:
            assert f"not shown at {width} columns: {', '.join(dropped)}" in " ".join(text.split())
        for fam in FAMILIES:  # identifiers in the key columns are never folded
            assert fam in text
        all_dropped[title] = dropped
    if width == 120:
        assert all_dropped["pass rates"] == []  # at 120 every pass-rate column fits


def test_wider_terminal_drops_fewer_columns() -> None:
    rows = stats_tables(_stats_data())[2][1]
    text_rows = [{k: str(v) for k, v in r.items()} for r in rows]
    cols = list(rows[0])
    dropped = [len(fit_columns(cols, text_rows, w)[1]) for w in (60, 80, 120, 200)]
    assert dropped == sorted(dropped, reverse=True) and dropped[0] > dropped[-1] == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "store"
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "flywheel.cli", "run-round", "--store", str(path), "--problems", "4",
                           "--families", "production_planning,facility_location", "--seed", "5", "--workers", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", [("stats",), ("store", "info"), ("store", "check"), ("datasets", "list"), ("config", "show"),
                                     ("contracts", "list")])
def test_cli_tables_at_width(command: tuple[str, ...], width: int, store: Path, capsys, monkeypatch) -> None:
    args = [*command, "--store", str(store)] if command[0] in ("stats", "store") else list(command)
    code, out, err = flywheel_here(capsys, monkeypatch, *args, columns=width)  # Rich sizes from $COLUMNS
    assert code == 0, err
    lines = out.splitlines()
    assert lines and max(len(line) for line in lines) <= width, command
    assert "…" not in out, command


def test_stats_full_width_formats(store: Path, capsys, monkeypatch) -> None:
    code, out, err = flywheel_here(capsys, monkeypatch, "stats", "--store", str(store), "--format", "csv")
    assert code == 0, err
    sections = out.split("\n\n")
    first = list(csv.reader(io.StringIO(sections[0].split("\n", 1)[1])))
    assert sections[0].startswith("# pass rates") and first[0][-2:] == ["wall s", "solve s"]  # no column dropped
    code, out, _ = flywheel_here(capsys, monkeypatch, "stats", "--store", str(store), "--format", "json")
    assert {"median_wall_s", "median_solve_s"} <= set(json.loads(out)["pass_rates"][0])
    code, _, err = flywheel_here(capsys, monkeypatch, "stats", "--store", str(store), "--format", "xml")
    assert code == 2 and "xml" in err


def test_every_table_goes_through_the_helper() -> None:
    """A new `rich.table.Table` elsewhere would bypass the 80-column fitting: only the helper builds tables."""
    root = Path(__file__).resolve().parents[1] / "flywheel"
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "rich.table" in p.read_text())
    assert users == ["commands/tables.py"]
