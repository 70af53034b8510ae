"""Schema migrations: how a store written by an older schema version becomes the current one.

Parquet parts are immutable, and views read them with ``union_by_name`` over a typed empty relation, so adding a
column needs no rewrite: old parts read it as NULL. A migration is needed only when a column is renamed, retyped
or its meaning changes; it then rewrites the affected parts (atomically, under the writer lock) and the version in
``store.json`` moves up one step. ``MIGRATIONS[v]`` takes a store from version ``v`` to ``v + 1``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from flywheel.store.files import atomic_write_json
from flywheel.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from flywheel.store.store import Store

MIGRATIONS: dict[int, Callable[[Store], None]] = {}


def migration(from_version: int) -> Callable[[Callable[[Store], None]], Callable[[Store], None]]:
    """Register the step from ``from_version`` to ``from_version + 1``."""

    def deco(fn: Callable[[Store], None]) -> Callable[[Store], None]:
        MIGRATIONS[from_version] = fn
        return fn

    return deco


def migrate(store: Store, version: int, target: int | None = None) -> list[int]:
    """Apply every step from ``version`` to ``target`` (default: the code's schema version); the caller holds the
    writer lock. Each step records itself in ``store.json`` before the next runs, so a crash resumes cleanly."""
    from solvers.errors import StoreError

    target = SCHEMA_VERSION if target is None else target
    applied = []
    meta_path = store.root / "store.json"
    meta = json.loads(meta_path.read_text())
    while version < target:
        step = MIGRATIONS.get(version)
        if step is None:
            raise StoreError(f"no migration from schema v{version} to v{version + 1}", culprit=str(store.root))
        step(store)
        version += 1
        history = [*meta.get("migrations", []), {"from": version - 1, "to": version,
                                                  "at": dt.datetime.now(dt.UTC).isoformat()}]
        meta = {**meta, "schema_version": version, "migrations": history}
        atomic_write_json(meta_path, meta)
        applied.append(version)
    store.meta = meta
    return applied
