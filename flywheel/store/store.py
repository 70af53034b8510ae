"""The sample store: a directory of immutable Parquet parts, per-part manifests, and SQL views over them.

Layout of a store directory::

    store.json                                   format, schema version, creation time
    catalog.duckdb                               the same views for the duckdb CLI (+ _meta, _parts), refreshed
                                                 by the writer; Store itself never depends on it
    writer.lock                                  flock of the single writer (holder's pid and command inside)
    quarantine.json                              parts `store check` found corrupt; views skip them
    tables/<table>/round=<r>/part-<sha>.parquet  immutable data
    tables/<table>/round=<r>/part-<sha>.parquet.manifest.json   rows, bytes, sha256: the part's commit record

Readers open an in-memory DuckDB whose views list the committed parts, so any number of readers can query while
one writer appends; a reader sees the parts committed when it opened (``refresh()`` to see newer ones).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.store import migrations
from flywheel.store.files import (
    MANIFEST_SUFFIX,
    TMP_PREFIX,
    atomic_write_json,
    fsync_dir,
    looks_like_parquet,
    manifest_path,
    part_of_manifest,
    read_manifest,
    sha256_file,
)
from flywheel.store.lock import WriterLock
from flywheel.store.schema import DERIVED_VIEWS, SCHEMA_VERSION, TABLES, TableSpec, duckdb_type, get_table
from solvers.errors import StoreError

FORMAT = "or-flywheel-store"
DEFAULT_PATH = "flywheel-store"


@dataclass(frozen=True)
class Part:
    """One committed Parquet part as its manifest describes it."""

    table: str
    round: int
    path: Path
    rows: int
    bytes: int
    sha256: str


class Store:
    """Open with ``Store.open(path)``. Writes go through ``write``; reads through ``query`` (Arrow) or ``con``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.writer = WriterLock(root / "writer.lock")
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET TimeZone = 'UTC'")
        self._parts: dict[str, list[Part]] = {}
        self._key_cache: dict[str, set[Any]] = {}  # table -> stored keys; only while holding the writer lock
        self.skipped: list[tuple[Path, str]] = []  # parts left out of the views on open, with the reason
        self.meta: dict[str, Any] = {}

    # ---- opening ------------------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path = DEFAULT_PATH, *, create: bool = True) -> Store:
        """Open (and with ``create``, initialise) the store at ``path``; views see every committed part.

        Raises ``StoreError`` naming the path if it cannot be created or is not a store, and naming the version
        if the store was written by a newer schema than this code knows.
        """
        root = Path(path).expanduser().absolute()
        meta_file = root / "store.json"
        if not meta_file.exists():
            if not create:
                raise StoreError("no store here (run `flywheel run-round --store DIR` to create one)",
                                 culprit=str(root))
            if root.exists() and not root.is_dir():
                raise StoreError("exists and is not a directory", culprit=str(root))
            if root.exists() and any(not _ours(p.name) for p in root.iterdir()):
                raise StoreError("directory is not empty and is not a store (no store.json)", culprit=str(root))
            _check_writable(root)
            with contextlib.suppress(OSError):
                # Private to its owner: the ground truth lives here, and processes that run user code as
                # another uid (the contract jail without bubblewrap, sandbox slots) must not be able to list it.
                root.chmod(0o700)
            creator = cls(root)
            try:
                with creator.writer:
                    (root / "tables").mkdir(exist_ok=True)
                    atomic_write_json(meta_file, {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                                                  "created_at": _now().isoformat()})
            finally:
                creator.close()
        store = cls(root)
        store.meta = _read_meta(meta_file)
        version = store.meta["schema_version"]
        if version > SCHEMA_VERSION:
            raise StoreError(f"written with schema v{version}; this or-flywheel reads up to v{SCHEMA_VERSION} "
                             "(upgrade or-flywheel)", culprit=str(root))
        if version < SCHEMA_VERSION:
            with store.lock():
                migrations.migrate(store, version)
            store.meta = _read_meta(meta_file)
        store.refresh()
        return store

    def close(self) -> None:
        self.writer.release()
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the writer lock ----------------------------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[Store]:
        """Hold the single-writer lock for a block of writes (re-entrant). A second writer process is refused
        with a ``StoreError`` naming the holder. Leaving the outermost block refreshes ``catalog.duckdb``."""
        first = not self.writer.held
        if first:
            _check_writable(self.root)
        self.writer.acquire()
        try:
            if first:
                self._clean_debris()
                self.refresh()
            yield self
        finally:
            if first:
                self._key_cache.clear()  # another process may write once the lock is gone
                self._sync_catalog()
            self.writer.release()

    def _clean_debris(self) -> None:
        """Remove what a killed writer left (temp files, Parquet parts that never got their manifest) and the
        parts a compaction superseded. Deleting superseded parts only here, at the start of the next writer
        session, gives readers that opened before the compaction the rest of a session to finish."""
        tables = self.root / "tables"
        for p in tables.rglob(f"{TMP_PREFIX}*"):
            p.unlink(missing_ok=True)
        for directory in tables.glob("*/round=*"):
            for name in _superseded(directory):
                manifest_path(directory / name).unlink(missing_ok=True)
                (directory / name).unlink(missing_ok=True)
        for p in tables.rglob("*.parquet"):
            if not manifest_path(p).exists():
                p.unlink(missing_ok=True)

    # ---- views --------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-scan the manifests and recreate every view, so parts committed since opening become visible."""
        quarantine = self.quarantine()
        self._parts, self.skipped = {}, []
        self._key_cache.clear()
        for name in TABLES:
            parts: list[Part] = []
            superseded: set[Path] = set()
            for directory in (self.root / "tables" / name).glob("round=*"):
                superseded |= {directory / n for n in _superseded(directory)}
            for mpath in sorted((self.root / "tables" / name).glob(f"round=*/*{MANIFEST_SUFFIX}")):
                if part_of_manifest(mpath) in superseded:
                    continue
                part = self._load_part(name, mpath, quarantine)
                if part is not None:
                    parts.append(part)
            self._parts[name] = self._create_view_skipping_bad(self.get_spec(name), parts)
        for name, sql in DERIVED_VIEWS.items():
            self.con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")

    def _load_part(self, table: str, mpath: Path, quarantine: Mapping[str, str]) -> Part | None:
        path = part_of_manifest(mpath)
        rel = str(path.relative_to(self.root))
        if rel in quarantine:
            self.skipped.append((path, f"quarantined: {quarantine[rel]}"))
            return None
        manifest = read_manifest(mpath)
        if manifest is None:
            self.skipped.append((path, "unreadable manifest"))
            return None
        if not looks_like_parquet(path, manifest["bytes"]):
            reason = "missing" if not path.exists() else "truncated or not Parquet (size or magic bytes differ)"
            self.skipped.append((path, reason))
            return None
        return Part(table, int(manifest["round"]), path, int(manifest["rows"]), int(manifest["bytes"]),
                    manifest["sha256"])

    def _create_view_skipping_bad(self, spec: TableSpec, parts: list[Part]) -> list[Part]:
        """Create the view; if DuckDB cannot bind it (a part whose footer is damaged although its size and magic
        bytes look right), probe each part alone, leave out the unreadable ones (named in ``skipped``), retry."""
        try:
            self._create_view(self.con, spec, parts)
            return parts
        except duckdb.Error:
            pass
        good = []
        for part in parts:
            try:
                self.con.sql(f"DESCRIBE SELECT * FROM read_parquet({_sql_str(str(part.path))})").fetchall()
                good.append(part)
            except duckdb.Error as exc:
                self.skipped.append((part.path, f"unreadable Parquet: {_first_line(exc)}"))
        self._create_view(self.con, spec, good)
        return good

    @staticmethod
    def get_spec(name: str) -> TableSpec:
        return get_table(name)

    @staticmethod
    def _create_view(con: duckdb.DuckDBPyConnection, spec: TableSpec, parts: Sequence[Part]) -> None:
        typed_empty = ", ".join(f"CAST(NULL AS {duckdb_type(t)}) AS {c}" for c, t in spec.columns.items())
        # A list column of a part written before it existed reads as [] rather than NULL, so list_contains works.
        cols = ", ".join(f"coalesce({c}, []::{duckdb_type(t)}) AS {c}" if pa.types.is_list(t) else c
                         for c, t in spec.columns.items())
        if parts:
            files = ", ".join(_sql_str(str(p.path)) for p in parts)
            # union_by_name + the typed empty relation: parts written before a column existed read it as NULL.
            body = (f"SELECT {cols} FROM (SELECT * FROM read_parquet([{files}], union_by_name = true) "
                    f"UNION ALL BY NAME SELECT {typed_empty} WHERE false)")
        else:
            body = f"SELECT {typed_empty} WHERE false"
        con.execute(f"CREATE OR REPLACE VIEW {spec.name} AS {body}")

    def parts(self, table: str | None = None) -> list[Part]:
        if table is None:
            return [p for ps in self._parts.values() for p in ps]
        return list(self._parts.get(table, []))

    def quarantine(self) -> dict[str, str]:
        try:
            data = json.loads((self.root / "quarantine.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def set_quarantine(self, entries: Mapping[str, str]) -> None:
        atomic_write_json(self.root / "quarantine.json", dict(entries))

    # ---- reading ------------------------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        """Run SQL against the views (``?`` or ``$name`` parameters); an Arrow table. A SQL error is a ``StoreError``."""
        try:
            args = (dict(params) if isinstance(params, Mapping) else list(params)) if params else None
            rel = self.con.sql(sql, params=args)
            return rel.to_arrow_table() if rel is not None else pa.table({})
        except duckdb.Error as exc:
            raise StoreError(f"SQL error: {_first_line(exc)}", culprit="sql") from None

    def scalar(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
        result = self.query(sql, params)
        return result.column(0)[0].as_py() if result.num_rows and result.num_columns else None

    def count(self, table: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM {get_table(table).name}"))

    # ---- writing ------------------------------------------------------------------------------------------

    def write(self, table: str, round: int, rows: Sequence[Mapping[str, Any]] | pa.Table) -> int:
        """Append ``rows`` to ``table`` in ``round`` as one immutable part; returns how many rows were new.

        Idempotent: rows whose key is already stored (or repeated within ``rows``) are dropped, so writing the
        same rows twice adds nothing. Atomic: the part appears whole (manifest committed last) or not at all.
        Unknown columns or values of the wrong type raise ``StoreError`` before anything is written.
        """
        spec = get_table(table)
        arrow = _to_arrow(spec, round, rows)
        if arrow.num_rows == 0:
            return 0
        with self.lock():
            new, fresh = self._only_new(spec, arrow)
            if new.num_rows == 0:
                return 0
            part = self._write_part(spec, round, new)
            self._key_cache[spec.name].update(fresh)
            self._parts.setdefault(spec.name, []).append(part)
            self._create_view(self.con, spec, self._parts[spec.name])
            return new.num_rows

    def _only_new(self, spec: TableSpec, batch: pa.Table) -> tuple[pa.Table, list[Any]]:
        """Drop rows whose key repeats within the batch (first wins) or is already stored; also return the new
        keys, which the caller adds to the key cache once the part is committed.

        The stored keys are read once per writer session into a Python set (valid while this process holds the
        lock: no one else can add any), so a batch costs one hash lookup per row instead of a scan of the table.
        """
        known = self._known_keys(spec)
        columns = [batch.column(k).to_pylist() for k in spec.key]
        keys = columns[0] if len(columns) == 1 else list(zip(*columns, strict=True))
        if known.isdisjoint(keys) and len(set(keys)) == len(keys):  # the usual case, decided in C
            return batch, keys
        keep: list[int] = []
        fresh: list[Any] = []
        seen: set[Any] = set()
        for i, key in enumerate(keys):
            if key in known or key in seen:
                continue
            seen.add(key)
            keep.append(i)
            fresh.append(key)
        if len(keep) == batch.num_rows:
            return batch, fresh
        return batch.take(pa.array(keep, pa.int64())), fresh

    def _known_keys(self, spec: TableSpec) -> set[Any]:
        if spec.name not in self._key_cache:
            stored = self.con.sql(f"SELECT {', '.join(spec.key)} FROM {spec.name}").to_arrow_table()
            columns = [c.to_pylist() for c in stored.columns]
            self._key_cache[spec.name] = set(columns[0] if len(columns) == 1 else zip(*columns, strict=True))
        return self._key_cache[spec.name]

    def compact(self, round: int, tables: Sequence[str] | None = None, min_parts: int = 2) -> int:
        """Merge each table's parts of ``round`` into one part; returns how many parts were merged away.

        A round commits in small batches (that is what makes it resumable), so it leaves dozens of small parts;
        one part per table and round keeps opening and scanning the store fast. Crash-safe: the merged part's
        manifest lists the parts it ``replaces`` and is committed before anything is deleted; from that moment
        the views read the merged part only, and the replaced files are removed by the next writer session.
        """
        merged = 0
        with self.lock():
            for name in tables or list(TABLES):
                spec = get_table(name)
                parts = [p for p in self._parts.get(name, []) if p.round == round]
                if len(parts) < min_parts:
                    continue
                table = pa.concat_tables([pq.read_table(p.path).select(list(spec.columns)).cast(spec.schema)
                                          for p in parts])
                part = self._write_part(spec, round, table, replaces=[p.path.name for p in parts])
                keep = [p for p in self._parts[name] if p not in parts]
                self._parts[name] = [*keep, part]
                self._create_view(self.con, spec, self._parts[name])
                merged += len(parts)
        return merged

    def _write_part(self, spec: TableSpec, round: int, table: pa.Table, replaces: Sequence[str] = ()) -> Part:
        directory = self.root / "tables" / spec.name / f"round={round}"
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f"{TMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}.parquet"
        try:
            pq.write_table(table, tmp, compression="zstd")
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            digest = sha256_file(tmp)
            final = directory / f"part-{digest[:20]}.parquet"
            os.replace(tmp, final)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"cannot write a part: {exc.strerror}", culprit=str(directory)) from None
        size = final.stat().st_size
        fsync_dir(directory)
        manifest = {"table": spec.name, "round": round, "file": final.name, "rows": table.num_rows,
                    "bytes": size, "sha256": digest, "schema_version": SCHEMA_VERSION, "key": list(spec.key),
                    "columns": list(spec.columns), "created_at": _now().isoformat(), "writer_pid": os.getpid()}
        if replaces:
            manifest["replaces"] = sorted(set(replaces) - {final.name})
        atomic_write_json(manifest_path(final), manifest)
        return Part(spec.name, round, final, table.num_rows, size, digest)

    # ---- the duckdb-CLI catalog ---------------------------------------------------------------------------

    def _sync_catalog(self) -> None:
        """Rewrite catalog.duckdb's views and part list. Best effort: a user holding the file open in the duckdb
        CLI must not fail a round, so a busy catalog is skipped (Store never reads it)."""
        path = self.root / "catalog.duckdb"
        try:
            con = duckdb.connect(str(path))
        except duckdb.Error:
            return
        try:
            for name in TABLES:
                self._create_view(con, get_table(name), self._parts.get(name, []))
            for name, sql in DERIVED_VIEWS.items():
                con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
            con.execute("CREATE OR REPLACE TABLE _meta (key VARCHAR, value VARCHAR)")
            con.executemany("INSERT INTO _meta VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in sorted(self.meta.items())])
            con.execute("CREATE OR REPLACE TABLE _parts (table_name VARCHAR, round BIGINT, path VARCHAR, "
                        "rows BIGINT, bytes BIGINT, sha256 VARCHAR)")
            rows = [(p.table, p.round, str(p.path.relative_to(self.root)), p.rows, p.bytes, p.sha256)
                    for p in self.parts()]
            if rows:
                con.executemany("INSERT INTO _parts VALUES (?, ?, ?, ?, ?, ?)", rows)
        except duckdb.Error:
            pass
        finally:
            con.close()

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def remove_part(self, part: Part) -> None:
        """Delete a part and its manifest (used by compaction and by tests); the caller holds the lock."""
        manifest_path(part.path).unlink(missing_ok=True)
        part.path.unlink(missing_ok=True)


def _to_arrow(spec: TableSpec, round: int, rows: Sequence[Mapping[str, Any]] | pa.Table) -> pa.Table:
    """Rows (dicts or an Arrow table) -> an Arrow table with exactly the spec's columns, round and created_at set.

    Dicts are converted column by column (about 4x faster than ``Table.from_pylist`` on wide rows); the distinct
    key tuples of the rows give the columns present, so an unknown column is caught without a per-row check.
    """
    if isinstance(rows, pa.Table):
        given = set(rows.column_names)
        source: pa.Table | None = rows
    else:
        if not rows:
            return spec.schema.empty_table()
        keysets = {tuple(r) for r in rows}
        given = set().union(*keysets)
        source = None
    unknown = sorted(given - set(spec.columns))
    if unknown:
        raise StoreError(f"unknown column(s) {unknown}; columns are {list(spec.columns)}", culprit=spec.name)
    missing_key = [k for k in spec.key if k not in given and k != "round"]
    if missing_key:
        raise StoreError(f"rows lack key column(s) {missing_key}", culprit=spec.name)
    n = source.num_rows if source is not None else len(rows)
    columns = []
    for name, typ in spec.columns.items():
        try:
            if name not in given:
                col = pa.nulls(n, typ)
            elif source is not None:
                col = source.column(name).cast(typ)
            else:
                values = (list(map(itemgetter(name), rows)) if len(keysets) == 1
                          else [r.get(name) for r in rows])
                col = pa.array(values, typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as exc:
            raise StoreError(f"column {name!r}: {_first_line(exc)}", culprit=spec.name) from None
        if name == "round":
            if col.null_count < n and set(col.drop_null().to_pylist()) != {round}:
                raise StoreError(f"rows carry a round other than {round}", culprit=spec.name)
            col = pa.repeat(pa.scalar(round, typ), n)
        elif name == "created_at" and col.null_count == n:
            col = pa.repeat(pa.scalar(_now(), typ), n)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=spec.schema)


def _ours(name: str) -> bool:
    """Files a store directory may hold before it is a store: the writer lock, and the policy response cache
    (``flywheel policy sample`` keeps it in the store directory by default)."""
    return name == "writer.lock" or name.startswith("policy_cache.sqlite")


def _superseded(directory: Path) -> set[str]:
    """Part file names in ``directory`` that a committed compaction manifest replaces."""
    out: set[str] = set()
    for mpath in directory.glob(f"*{MANIFEST_SUFFIX}"):
        manifest = read_manifest(mpath)
        if manifest and part_of_manifest(mpath).exists():
            out.update(manifest.get("replaces", []))
    return out


def _check_writable(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store directory: {exc.strerror}", culprit=str(root)) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise StoreError("the store directory is not writable", culprit=str(root))


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StoreError(f"unreadable store metadata: {exc}", culprit=str(path)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("schema_version"), int):
        raise StoreError("not an or-flywheel store metadata file", culprit=str(path))
    return meta


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def remove_store(path: str | Path) -> None:
    """Delete a whole store directory (tests and `clean` use it); refuses a directory that is not a store."""
    root = Path(path)
    _read_meta(root / "store.json")
    shutil.rmtree(root)
