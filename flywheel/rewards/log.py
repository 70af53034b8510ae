"""Reward calls into the store: each scored completion is an attempt (policy ``rl:<name>``, lineage: checkpoint,
step, reward, source) with its execution and solves, as a round's policy samples are. A ``sandbox_error`` (no
reward) is an attempt without an execution, so a later pass can run it again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flywheel.rewards.core import Score, completion_text
from flywheel.store import Store
from flywheel.store.rows import attempt_row, execution_row, solve_rows
from solvers.records import Attempt, Execution, canonical_json, content_hash


def log_rewards(path: str, *, source: str, policy: str, checkpoint: str, step: int, round: int,
                prompts: Sequence[Any], texts: Sequence[str], codes: Sequence[str | None],
                executions: Sequence[Execution | None], scores: Sequence[Score],
                problem_ids: Sequence[Any] | None) -> int:
    """Append one reward batch; returns the attempts written."""
    attempts, execs, solves = [], [], []
    spec = f"rl:{policy}"
    for i, (text, code, execution, sc) in enumerate(zip(texts, codes, executions, scores, strict=True)):
        prompt = completion_text(prompts[i]) if i < len(prompts) else ""
        pid = (problem_ids[i] if problem_ids is not None and i < len(problem_ids) else None) or \
            f"prompt-{content_hash(prompt)}"
        prompt_hash = content_hash(prompt)
        aid = content_hash(canonical_json({"problem_id": str(pid), "policy": spec, "prompt_hash": prompt_hash,
                                           "step": step, "index": i, "response": text}))
        sampling = {"source": source, "step": step, "reward": sc.reward, "match": sc.match, "parts": sc.parts,
                    "checkpoint_hash": checkpoint}
        attempt = Attempt(attempt_id=aid, problem_id=str(pid), round=round, policy=spec, response=text,
                          code=code or "", sample_index=i, prompt_hash=prompt_hash, sampling=sampling,
                          label_source="self")
        attempts.append(attempt_row(attempt, {"source": source, "step": step, "checkpoint": checkpoint}))
        if execution is not None and execution.status.value != "sandbox_error":
            execs.append(execution_row(aid, execution))
            solves.extend(solve_rows(aid, execution))
    store = Store.open(path)
    try:
        n = store.write("attempts", round, attempts)
        if solves:
            store.write("solves", round, solves)
        if execs:
            store.write("executions", round, execs)
    finally:
        store.close()
    return n
