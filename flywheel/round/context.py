"""What every stage of a round shares: the context it runs in, how often it commits, and its row helpers."""

from __future__ import annotations

import datetime as dt
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from flywheel.round.plan import RoundPlan
from flywheel.store import Store
from solvers.records import canonical_json, content_hash

COMMIT_SECONDS = 10.0  # commit at least this often: at most this much work is redone after a crash


def commit_every(n_items: int) -> int:
    """Items per committed batch: about a dozen commits per stage, 1..32 items each. Each commit writes a few
    small Parquet parts (~0.1 s), so small rounds commit every item and large ones amortise the cost."""
    return max(1, min(32, n_items // 12))


@dataclass
class RoundContext:
    store: Store
    plan: RoundPlan
    round: int
    workers: int
    advance: Callable[[str, int], None]  # (stage, n finished)
    set_total: Callable[[str, int], None]
    notes: list[str] = field(default_factory=list)


Stage = Callable[[RoundContext], Iterator[int]]


def infra_error_row(key: Sequence[Any], stage: str, kind: str, message: str, *, problem_id: str | None = None,
                    attempt_id: str | None = None, policy: str | None = None) -> dict[str, Any]:
    """An ``infra_errors`` row: a failure that is never counted against a program or a model. ``key`` makes its
    id (the caller decides whether a retry of the same failure is a new row)."""
    return {"error_id": content_hash(canonical_json(list(key))), "stage": stage, "problem_id": problem_id,
            "attempt_id": attempt_id, "policy": policy, "kind": kind, "message": message, "event_at": now()}


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message and where it was raised, for a stored error row."""
    text = str(exc).strip().splitlines()
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    loc = f" ({os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return (text[0] if text else type(exc).__name__)[:300] + loc
