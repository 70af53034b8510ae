"""The CLI's error contract: user errors print one line and exit 2; config errors name file, key and nearest key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _flywheel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flywheel.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("run-round", "--store"), "requires an argument"),
        (("no-such-command",), "No such command"),
        (("config", "show", "--config", "/nonexistent/cfg.toml"), "/nonexistent/cfg.toml: file not found"),
    ],
)
def test_user_errors_exit_2_with_one_clear_line(args: tuple[str, ...], expected: str):
    proc = _flywheel(*args)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_config_key_names_file_key_and_nearest(tmp_path: Path):
    cfg = tmp_path / "round.toml"
    cfg.write_text("[round]\nproblem = 5\n")
    proc = _flywheel("config", "show", "--config", str(cfg))
    assert proc.returncode == 2
    assert str(cfg) in proc.stderr and "round.problem" in proc.stderr and "round.problems" in proc.stderr


def test_malformed_toml_is_named(tmp_path: Path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[round\nproblems = 5\n")
    proc = _flywheel("config", "show", "--config", str(cfg))
    assert proc.returncode == 2 and "malformed TOML" in proc.stderr and str(cfg) in proc.stderr


def test_config_show_lists_every_default(tmp_path: Path):
    cfg = tmp_path / "ok.toml"
    cfg.write_text("[round]\nproblems = 7\n")
    proc = _flywheel("config", "show", "--config", str(cfg), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["round"]["problems"] == 7 and data["round"]["seed"] == 0  # override and default side by side
    assert {"round", "store", "sandbox"} <= set(data)
