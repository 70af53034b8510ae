"""``--problems-file FILE.jsonl``: problems that come from outside the generators (benchmark-shaped lines).

Each line is a JSON object with ``id`` and ``question`` and optionally ``answer`` (a number, ``"infeasible"``,
``"unbounded"`` or null) and ``family``. Such problems have no IR (ir=None) and carry label_source "benchmark";
a known answer becomes a ground truth with that status so the round can still score attempts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from solvers.errors import ConfigError
from solvers.records import GroundTruth, Problem, SolveStatus

_STATUS_WORDS = {"infeasible": SolveStatus.INFEASIBLE, "unbounded": SolveStatus.UNBOUNDED}


def _ground_truth(answer: Any, where: str) -> GroundTruth | None:
    if answer is None:
        return None
    if isinstance(answer, str):
        word = answer.strip().lower()
        if word in _STATUS_WORDS:
            return GroundTruth(status=_STATUS_WORDS[word])
        try:
            answer = float(word)
        except ValueError:
            raise ConfigError(f"answer must be a number, \"infeasible\" or null, got {answer!r}", culprit=where) from None
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        raise ConfigError(f"answer must be a finite number, \"infeasible\" or null, got {answer!r}", culprit=where)
    return GroundTruth(status=SolveStatus.OPTIMAL, objective=float(answer))


def load_problems_file(path: str | Path) -> list[Problem]:
    """Problems of a JSONL file, in file order. A bad line raises ConfigError naming ``FILE:LINE``; blank lines are
    skipped; a repeated id is an error (attempts are keyed by problem id)."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError("problems file not found", culprit=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read problems file: {exc}", culprit=str(p)) from None
    default_family = p.parent.name if p.stem == "test" else p.stem
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not valid JSON ({exc.msg} at column {exc.colno})", culprit=where) from None
        if not isinstance(row, dict):
            raise ConfigError("each line must be a JSON object with id and question", culprit=where)
        pid, question = row.get("id"), row.get("question")
        if not isinstance(pid, (str, int)) or isinstance(pid, bool) or str(pid).strip() == "":
            raise ConfigError("missing or empty 'id' (a string or integer)", culprit=where)
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("missing or empty 'question'", culprit=where)
        pid = str(pid)
        if pid in seen:
            raise ConfigError(f"id {pid!r} already used on line {seen[pid]}", culprit=where)
        seen[pid] = n
        family = row.get("family") or default_family
        problems.append(Problem(
            problem_id=pid, family=str(family), generator_version="", generator_code_hash="", seed=0, difficulty=0,
            params={"source_file": p.name, "line": n, "answer": row.get("answer")}, question=question, ir=None,
            ground_truth=_ground_truth(row.get("answer"), where), label_source="benchmark",
            template_id=f"file:{p.name}"))
    return problems
