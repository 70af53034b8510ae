"""The store against real DuckDB and real Parquet files: idempotent atomic writes, views, lock, integrity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flywheel.store import Store
from flywheel.store.check import check_store
from flywheel.store.schema import SCHEMA_VERSION
from solvers.errors import FlywheelError, StoreError

REPO = Path(__file__).resolve().parents[1]


def problem_rows(n: int, family: str = "diet", start: int = 0) -> list[dict]:
    return [{"problem_id": f"p{i:05d}", "family": family, "seed": i, "difficulty": 1 + i % 5, "gt_status": "optimal",
             "gt_objective": float(i), "disputed": False, "question": f"question {i}"} for i in range(start, start + n)]


def attempt_rows(n: int) -> list[dict]:
    return [{"attempt_id": f"a{i:05d}", "problem_id": f"p{i:05d}", "policy": "reference", "api": "pyomo",
             "code": "print(1)", "label_source": "generator"} for i in range(n)]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store.open(tmp_path / "store")
    yield st
    st.close()


def test_write_is_idempotent_by_key(store: Store) -> None:
    assert store.write("problems", 1, problem_rows(10)) == 10
    assert store.write("problems", 1, problem_rows(10)) == 0  # the same rows again add nothing
    assert len(store.parts("problems")) == 1  # and no empty part either
    # Overlapping batch in a later round: only the 5 new keys land; duplicates inside one batch count once.
    assert store.write("problems", 2, problem_rows(10, start=5) + problem_rows(3, start=12)) == 5
    assert store.count("problems") == 15
    assert store.query("SELECT count(DISTINCT problem_id) FROM problems").column(0)[0].as_py() == 15
    rounds = store.query("SELECT round, count(*) AS n FROM problems GROUP BY 1 ORDER BY 1").to_pylist()
    assert rounds == [{"round": 1, "n": 10}, {"round": 2, "n": 5}]


def test_reopen_sees_parts_and_views_have_every_column(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as st:
        st.write("problems", 0, problem_rows(4))
        st.write("attempts", 0, attempt_rows(3))
    with Store.open(tmp_path / "s", create=False) as st:
        assert st.count("problems") == 4
        # Columns never written are NULL, not missing: the typed empty relation supplies them.
        assert st.query("SELECT count(*) FROM problems WHERE ir_json IS NULL").column(0)[0].as_py() == 4
        samples = st.query("SELECT attempt_id, family, accepted, objective_match FROM samples ORDER BY 1").to_pylist()
        assert [s["attempt_id"] for s in samples] == ["a00000", "a00001", "a00002"]
        assert all(s["accepted"] is None and s["objective_match"] is None for s in samples)  # not executed yet


def test_samples_accepted_follows_reject_verdicts(store: Store) -> None:
    store.write("problems", 1, problem_rows(2))
    store.write("attempts", 1, attempt_rows(2))
    store.write("executions", 1, [{"attempt_id": "a00000", "status": "ok", "objective": 0.0},
                                  {"attempt_id": "a00001", "status": "ok", "objective": 7.0}])
    store.write("verdicts", 1, [
        {"verdict_id": "v1", "attempt_id": "a00000", "contract": "objective_matches", "version": "1",
         "severity": "reject", "outcome": "pass"},
        {"verdict_id": "v2", "attempt_id": "a00001", "contract": "objective_matches", "version": "1",
         "severity": "reject", "outcome": "fail"},
        {"verdict_id": "v3", "attempt_id": "a00001", "contract": "style", "version": "1", "severity": "warn",
         "outcome": "fail"},
    ])
    got = {r["attempt_id"]: r for r in store.query("SELECT * FROM samples").to_pylist()}
    assert got["a00000"]["accepted"] is True and got["a00000"]["objective_match"] is True
    assert got["a00001"]["accepted"] is False and got["a00001"]["objective_match"] is False
    assert got["a00001"]["failed_contracts"] == "objective_matches,style"


def test_bad_rows_are_refused_before_anything_is_written(store: Store) -> None:
    with pytest.raises(StoreError, match="unknown column"):
        store.write("problems", 1, [{"problem_id": "x", "colour": "red"}])
    with pytest.raises(StoreError, match="difficulty"):
        store.write("problems", 1, [{"problem_id": "x", "difficulty": "hard"}])
    with pytest.raises(StoreError, match="lack key"):
        store.write("attempts", 1, [{"problem_id": "x"}])
    with pytest.raises(FlywheelError, match="unknown store table"):
        store.write("problemz", 1, problem_rows(1))
    assert store.parts() == []


def test_sql_error_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="SQL error"):
        store.query("SELECT nope FROM problems")


def test_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    """A real second process holds the lock; this one is refused with its pid, and may still read."""
    path = tmp_path / "s"
    Store.open(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from flywheel.store import Store
            st = Store.open({str(path)!r})
            with st.lock():
                st.write("problems", 1, [{{"problem_id": "held", "family": "diet"}}])
                print("locked", flush=True)
                time.sleep(30)
        """)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "locked"
        st = Store.open(path)
        with pytest.raises(StoreError, match=f"pid {holder.pid}"):
            st.write("problems", 1, problem_rows(1))
        assert st.count("problems") == 1  # reading while the other process holds the writer lock is fine
        st.close()
    finally:
        holder.kill()
        holder.wait()
    with Store.open(path) as st:  # the kernel dropped the killed holder's flock: no stale lock
        assert st.write("problems", 1, problem_rows(1)) == 1


def test_reader_queries_while_a_writer_appends(tmp_path: Path) -> None:
    path = tmp_path / "s"
    Store.open(path).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            from flywheel.store import Store
            st = Store.open({str(path)!r})
            with st.lock():
                for b in range(12):
                    st.write("problems", 1, [{{"problem_id": f"p{{b}}-{{i}}", "family": "diet"}} for i in range(50)])
        """)], cwd=REPO)
    seen = []
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        with Store.open(path, create=False) as reader:
            n = reader.count("problems")
            assert n % 50 == 0  # a part is visible whole or not at all
            seen.append(n)
    assert writer.wait(timeout=60) == 0
    with Store.open(path, create=False) as reader:
        assert reader.count("problems") == 600
    assert seen == sorted(seen)


def test_crash_debris_is_invisible_and_cleaned(store: Store) -> None:
    store.write("problems", 1, problem_rows(5))
    part = store.parts("problems")[0]
    # Simulate a writer killed between the Parquet rename and the manifest rename, and one killed mid-temp-file.
    orphan = part.path.with_name("part-deadbeef.parquet")
    orphan.write_bytes(part.path.read_bytes())
    tmp = part.path.with_name(".tmp-123.parquet")
    tmp.write_bytes(b"PAR1 half")
    store.refresh()
    assert store.count("problems") == 5  # the orphan has no manifest: not committed, not visible
    report = check_store(store, quarantine=False)
    assert report.ok and {f.severity for f in report.findings} == {"warning"}
    with store.lock():
        pass
    assert not orphan.exists() and not tmp.exists()


@pytest.mark.parametrize("where", [0.5, -12])  # a byte in the data pages; a byte in the footer's metadata
def test_corrupt_and_missing_parts_are_named_and_skipped(tmp_path: Path, where: float,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s"
    with Store.open(path) as st:
        st.write("problems", 1, problem_rows(5))
        st.write("problems", 2, problem_rows(5, start=5))
        st.write("attempts", 1, attempt_rows(5))
        p1, p2 = sorted(st.parts("problems"), key=lambda p: p.round)
        a1 = st.parts("attempts")[0]
    # Flip one byte (same size, magic bytes intact: the open-time probe cannot tell) and delete another part.
    data = bytearray(p1.path.read_bytes())
    data[int(len(data) * where) if where > 0 else int(where)] ^= 0xFF
    p1.path.write_bytes(bytes(data))
    a1.path.unlink()
    with Store.open(path) as st:
        assert st.count("attempts") == 0 and any("missing" in why for _, why in st.skipped)
        report = check_store(st)
        problems = {f.path: f.problem for f in report.errors}
        assert set(problems) == {str(p1.path.relative_to(path)), str(a1.path.relative_to(path))}
        assert "sha256" in problems[str(p1.path.relative_to(path))]
        assert report.quarantined == sorted(problems)
        # The rest of the store stays usable: round 2's problems still answer.
        assert st.query("SELECT count(*) FROM problems").column(0)[0].as_py() == 5
    from flywheel.cli import main

    monkeypatch.setattr(sys, "argv", ["flywheel", "store", "check", "--store", str(path)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    out = capsys.readouterr()
    assert p1.path.name in out.out + out.err


def test_newer_schema_is_refused_and_older_migrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flywheel.store import migrations
    from flywheel.store import store as store_mod

    path = tmp_path / "s"
    Store.open(path).close()
    meta = json.loads((path / "store.json").read_text())
    (path / "store.json").write_text(json.dumps({**meta, "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(StoreError, match="upgrade"):
        Store.open(path)
    # Pretend the code moved to the next version with one registered step: opening runs it once and records it.
    calls = []
    (path / "store.json").write_text(json.dumps(meta))
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(migrations.MIGRATIONS, SCHEMA_VERSION, lambda st: calls.append(st.root))
    with Store.open(path) as st:
        assert calls == [path.absolute()]
        assert st.meta["schema_version"] == SCHEMA_VERSION + 1
        assert st.meta["migrations"][0]["from"] == SCHEMA_VERSION
    Store.open(path).close()
    assert len(calls) == 1


def test_unwritable_or_foreign_directory_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not a store"):
        Store.open(foreign)
    assert os.listdir(foreign) == ["notes.txt"]
    if os.geteuid() != 0:  # root ignores directory permissions
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        with pytest.raises(StoreError, match="ro"):
            Store.open(locked / "store")


def test_parts_are_real_parquet_with_manifest(store: Store) -> None:
    store.write("problems", 3, problem_rows(7))
    part = store.parts("problems")[0]
    assert part.path.parent.name == "round=3"
    assert pq.read_table(part.path).num_rows == 7
    manifest = json.loads(part.path.with_name(part.path.name + ".manifest.json").read_text())
    assert manifest["rows"] == 7 and manifest["sha256"].startswith(part.path.stem.removeprefix("part-"))


def test_compaction_merges_a_round_and_survives_a_crash_before_cleanup(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with Store.open(path) as st:
        for start in range(0, 20, 4):  # five small commits, as a resumable round makes them
            st.write("problems", 1, problem_rows(4, start=start))
        st.write("problems", 2, problem_rows(3, start=100))
        before = st.query("SELECT * EXCLUDE (created_at) FROM problems ORDER BY problem_id").to_pylist()
        assert st.compact(1) == 5
        assert len([p for p in st.parts("problems") if p.round == 1]) == 1
        assert st.query("SELECT * EXCLUDE (created_at) FROM problems ORDER BY problem_id").to_pylist() == before
    # The writer "died" before its next session: the replaced files are still on disk, yet nothing reads them.
    files = list((path / "tables" / "problems" / "round=1").glob("*.parquet"))
    assert len(files) == 6
    with Store.open(path) as st:
        assert st.count("problems") == 23
        report = check_store(st, quarantine=False)
        assert report.ok and report.tables["problems"] == {"parts": 2, "rows": 23}
        with st.lock():  # the next writer session removes the superseded parts
            pass
        assert len(list((path / "tables" / "problems" / "round=1").glob("*.parquet"))) == 1
        assert st.write("problems", 1, problem_rows(20)) == 0  # still idempotent after compaction


def test_catalog_file_serves_the_same_views_to_the_duckdb_cli(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "s"
    with Store.open(path) as st:
        st.write("problems", 1, problem_rows(6))
        st.write("attempts", 1, attempt_rows(4))
    con = duckdb.connect(str(path / "catalog.duckdb"), read_only=True)  # what `duckdb catalog.duckdb` does
    try:
        assert con.execute("SELECT count(*) FROM problems").fetchone()[0] == 6
        assert con.execute("SELECT count(*) FROM samples").fetchone()[0] == 4
        assert con.execute("SELECT sum(rows) FROM _parts").fetchone()[0] == 10
        version = con.execute("SELECT value FROM _meta WHERE key = 'schema_version'").fetchone()[0]
        assert json.loads(version) == SCHEMA_VERSION
    finally:
        con.close()


def test_a_new_store_is_private_to_its_owner_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    """The ground truth lives in the store: processes running user code as another uid must not list it."""
    Store.open(tmp_path / "new").close()
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"
    Store.open(shared).close()
    shared.chmod(0o750)  # the owner chose to share it with a group: reopening does not undo that
    Store.open(shared).close()
    assert shared.stat().st_mode & 0o777 == 0o750
