"""The rows the engine records: one verdict per sample x contract, repairs, and disputes.

They are flat on purpose (evidence is a JSON string) so the store can write ``row.model_dump()`` straight into a
DuckDB table and a user can ``select contract, outcome, count(*) from verdicts group by 1, 2``.
"""

from __future__ import annotations

import json
from typing import Any

from solvers.records import Record, canonical_json, content_hash


class VerdictRow(Record):
    verdict_id: str  # hash of (sample_id, contract, version): re-checking with the same version is idempotent
    sample_id: str
    attempt_id: str
    problem_id: str
    round: int | None = None
    suite: str = ""
    contract: str
    version: str
    stage: str
    severity: str
    outcome: str  # pass | fail | skip | contract_error
    score: float | None = None
    message: str = ""
    evidence: str = "{}"  # JSON object
    dispute: str = ""  # non-empty: the dispute kind this verdict raised
    duration_s: float = 0.0

    @property
    def evidence_dict(self) -> dict[str, Any]:
        return json.loads(self.evidence)


class RepairRecord(Record):
    """One answer-blind repair: which contract changed the program, how, and the code before and after."""

    repair_id: str
    sample_id: str
    attempt_id: str
    contract: str
    version: str
    kind: str
    message: str = ""
    before: str
    after: str


class DisputeRow(Record):
    """A sample held for review instead of failed: it beats its ground truth, or the ground truth is disputed."""

    dispute_id: str
    sample_id: str
    problem_id: str
    contract: str
    kind: str  # beats_ground_truth | ground_truth_disputed | solver_disagreement
    message: str = ""
    evidence: str = "{}"


def verdict_id(sample_id: str, contract: str, version: str) -> str:
    return content_hash(canonical_json([sample_id, contract, version]))


def evidence_json(evidence: dict[str, Any]) -> str:
    """Canonical JSON of evidence; non-JSON values (numpy scalars, enums) become their string form."""
    return json.dumps(evidence, sort_keys=True, separators=(",", ":"), default=_jsonable, allow_nan=True)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset, tuple)):
        return sorted(obj, key=str)
    return str(obj)


def verdict_dicts(rows: list[VerdictRow]) -> list[dict[str, Any]]:
    """Rows as plain dicts for the store's ``verdicts`` table."""
    return [r.model_dump() for r in rows]
