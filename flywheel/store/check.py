"""Integrity check of a store: schema version, every part against its manifest (bytes, sha256, row count,
column types), orphans and debris. Corrupt parts are quarantined so the views skip them and the rest of the
store stays usable."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.store.files import (
    MANIFEST_SUFFIX,
    TMP_PREFIX,
    manifest_path,
    part_of_manifest,
    read_manifest,
    sha256_file,
)
from flywheel.store.schema import SCHEMA_VERSION, TABLES
from flywheel.store.store import Store, _superseded
from solvers.errors import StoreError


@dataclass
class Finding:
    path: str  # relative to the store root
    problem: str
    severity: str = "error"  # error: data is unreadable or wrong; warning: harmless debris


@dataclass
class CheckReport:
    schema_version: int
    tables: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> {parts, rows}
    findings: list[Finding] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors


def check_store(store: Store, *, quarantine: bool = True) -> CheckReport:
    """Verify every committed part. With ``quarantine``, record corrupt parts in quarantine.json (under the writer
    lock; skipped with a warning if another process is writing) and refresh the views."""
    root = store.root
    report = CheckReport(schema_version=int(store.meta.get("schema_version", -1)))
    if report.schema_version != SCHEMA_VERSION:
        report.findings.append(Finding("store.json", f"schema v{report.schema_version}, code expects v{SCHEMA_VERSION}"))
    bad: dict[str, str] = {}
    tables_dir = root / "tables"
    for table_dir in sorted(p for p in tables_dir.iterdir() if p.is_dir()) if tables_dir.exists() else []:
        name = table_dir.name
        if name not in TABLES:
            report.findings.append(Finding(_rel(root, table_dir), "unknown table (no registered spec)", "warning"))
            continue
        stats = report.tables.setdefault(name, {"parts": 0, "rows": 0})
        superseded = {d / n for d in table_dir.glob("round=*") for n in _superseded(d)}
        for mpath in sorted(table_dir.glob(f"round=*/*{MANIFEST_SUFFIX}")):
            part = part_of_manifest(mpath)
            if part in superseded:
                continue
            problem = _check_part(part, mpath, name)
            if problem:
                bad[_rel(root, part)] = problem
                report.findings.append(Finding(_rel(root, part), problem))
                continue
            stats["parts"] += 1
            stats["rows"] += int(read_manifest(mpath)["rows"])  # type: ignore[index]
        if superseded:
            report.findings.append(Finding(_rel(root, table_dir), f"{len(superseded)} part(s) superseded by "
                                           "compaction, not read; the next writer session removes them", "warning"))
        for p in sorted(table_dir.glob("round=*/*.parquet")):
            if not manifest_path(p).exists():
                report.findings.append(Finding(_rel(root, p), "orphan part without manifest (an interrupted write; "
                                                              "the next writer removes it)", "warning"))
        for p in sorted(table_dir.glob(f"round=*/{TMP_PREFIX}*")):
            report.findings.append(Finding(_rel(root, p), "temp file of an interrupted write", "warning"))
    for name in TABLES:
        report.tables.setdefault(name, {"parts": 0, "rows": 0})
    if quarantine:
        previous = store.quarantine()
        # A part that now checks clean (restored from backup) leaves quarantine; newly bad ones enter it.
        wanted = {k: v for k, v in previous.items() if k in bad} | bad
        if wanted != previous:
            try:
                with store.lock():
                    store.set_quarantine(wanted)
                report.quarantined = sorted(set(wanted) - set(previous))
            except StoreError as exc:
                report.findings.append(Finding("quarantine.json", f"not updated: {exc}", "warning"))
        store.refresh()
    return report


def _check_part(part: Path, mpath: Path, table: str) -> str | None:
    manifest = read_manifest(mpath)
    if manifest is None:
        return "manifest unreadable"
    if not part.exists():
        return "missing (the manifest lists it, the file is gone)"
    size = part.stat().st_size
    if size != manifest["bytes"]:
        return f"size {size} bytes, manifest says {manifest['bytes']}"
    digest = sha256_file(part)
    if digest != manifest["sha256"]:
        return f"sha256 {digest[:12]}.. differs from the manifest's {manifest['sha256'][:12]}.."
    try:
        meta = pq.read_metadata(part)
        schema = pq.read_schema(part)
    except (pa.ArrowException, OSError) as exc:
        return f"not readable as Parquet: {exc}"
    if meta.num_rows != manifest["rows"]:
        return f"{meta.num_rows} rows, manifest says {manifest['rows']}"
    spec = TABLES[table]
    for fld in schema:
        want = spec.columns.get(fld.name)
        if want is not None and not fld.type.equals(want):
            return f"column {fld.name!r} is {fld.type}, schema says {want}"
    return None


def _rel(root: Path, path: Path) -> str:
    return str(path.relative_to(root))
