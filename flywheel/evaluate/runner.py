"""Run completions through the sandbox and judge them: the engine behind ``flywheel eval score`` and ``eval run``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flywheel.evaluate.score import DEFAULT_RULES, Completion, ItemVerdict, judge, summarise
from solvers.records import Execution
from solvers.sandbox import Program, SandboxConfig, run_batch


def execute_completions(completions: Sequence[Completion], *, timeout_s: float = 60.0, workers: int | None = None,
                        progress: bool = False, server: str | None = None) -> list[Execution | None]:
    """Execute every completion's program (None where no code could be extracted), in input order; on a running
    ``flywheel sandbox serve`` when ``server`` (default: ``FLYWHEEL_SANDBOX_URL``) names one."""
    programs: list[Program] = []
    slots: list[int] = []
    for i, item in enumerate(completions):
        code = item.program()
        if code:
            programs.append(Program(program_id=f"{item.benchmark or 'item'}/{item.id}/{item.sample_index}", code=code))
            slots.append(i)
    results: list[Execution | None] = [None] * len(completions)
    if programs:
        server = server or os.environ.get("FLYWHEEL_SANDBOX_URL")
        config = SandboxConfig(timeout_s=timeout_s, **({"backend": "server", "server_url": server} if server else {}))
        for slot, execution in zip(slots, run_batch(programs, config, workers=workers, progress=progress),
                                   strict=True):
            results[slot] = execution
    return results


def score_completions(completions: Sequence[Completion], *, rules: Sequence[str] = DEFAULT_RULES,
                      timeout_s: float = 60.0, workers: int | None = None, k: int = 1,
                      progress: bool = False) -> tuple[list[ItemVerdict], dict[str, Any]]:
    """Execute and judge; returns per-item verdicts and the summary (see ``summarise``)."""
    executions = execute_completions(completions, timeout_s=timeout_s, workers=workers, progress=progress)
    verdicts = [judge(item, ex, rules) for item, ex in zip(completions, executions, strict=True)]
    return verdicts, summarise(verdicts, rules, k)


def write_results(out: Path, verdicts: Sequence[ItemVerdict], summary: dict[str, Any],
                  meta: dict[str, Any] | None = None) -> None:
    """``verdicts.jsonl`` (one line per item and sample) and ``summary.json`` (with the rules' definitions)."""
    from contracts.tolerance import RULES

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "verdicts.jsonl.tmp"
    tmp.write_text("".join(v.canonical_json() + "\n" for v in verdicts))
    tmp.replace(out / "verdicts.jsonl")
    rules = {name: (fn.__doc__ or "").strip() for name, fn in RULES.items()}
    doc = {"summary": summary, "rules": rules, **(meta or {})}
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True))
    tmp.replace(out / "summary.json")
