"""Run the ``flywheel`` CLI inside the test process (no interpreter start-up): exit code, stdout, stderr.

Shared by the CLI tests so that every one calls the command line the same way (``COLUMNS`` fixed so Rich tables do
not wrap differently from one terminal to another). Not a test module: pytest collects only ``test_*.py``.
"""

from __future__ import annotations

import sys

import pytest


def flywheel_here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                  *args: str, columns: int = 200) -> tuple[int, str, str]:
    """``flywheel *args`` in this process: (exit code, stdout, stderr); Rich sees a ``columns``-wide terminal."""
    from flywheel.cli import main

    monkeypatch.setattr(sys, "argv", ["flywheel", *args])
    monkeypatch.setenv("COLUMNS", str(columns))
    capsys.readouterr()
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
