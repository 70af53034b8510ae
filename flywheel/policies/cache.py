"""Response cache: a SQLite file keyed by request fingerprint, so re-running a round sends no request that already
succeeded.

The fingerprint covers everything that decides a reply: the model identity (served name + endpoint, or checkpoint
hash), the prompt template hash, the rendered prompt, the sampling parameters, the problem id and the sample index.
Only successful completions are stored; infrastructure failures are retried on the next run. SQLite in WAL mode lets
two processes share one cache; each write commits at once, so a crash mid-round keeps what was already paid for.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from flywheel.policies.backends.base import Completion
from solvers.records import canonical_json, content_hash

CACHE_FILE = "policy_cache.sqlite"


def fingerprint(**parts: Any) -> str:
    """Full sha256 of the canonical JSON of the parts (named, so adding a part never collides with an old key)."""
    return content_hash(canonical_json(parts), 64)


class ResponseCache:
    def __init__(self, cache_dir: str | Path) -> None:
        self.path = Path(cache_dir) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a process crash (what a killed round needs) without one fsync per
        # reply, which would cap throughput at the disk's sync rate.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT,"
            " usage TEXT, latency_s REAL, tries INTEGER, meta TEXT, created REAL)"
        )
        self.db.commit()

    def get(self, key: str) -> Completion | None:
        row = self.db.execute("SELECT text, finish_reason, usage, latency_s, tries FROM responses WHERE key = ?",
                              (key,)).fetchone()
        if row is None:
            return None
        return Completion(text=row[0], finish_reason=row[1] or "", usage=json.loads(row[2] or "{}"),
                          latency_s=row[3] or 0.0, tries=row[4] or 1)

    def put(self, key: str, completion: Completion, meta: dict[str, Any] | None = None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, completion.text, completion.finish_reason, json.dumps(completion.usage), completion.latency_s,
             completion.tries, canonical_json(meta or {}), time.time()),
        )
        self.db.commit()

    def __len__(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.db.close()
