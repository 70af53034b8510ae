"""`flywheel run-round` and `flywheel sql` end to end, as a user runs them: real generators, solvers, sandbox,
DuckDB files; plus the bad inputs, which must fail with one line, exit 2, and leave the store untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_here import flywheel_here

from flywheel.store import Store

REPO = Path(__file__).resolve().parents[1]
FAMILIES = "diet,blending,production_planning"  # small LPs: the round's machinery is under test, not the solvers


def flywheel(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flywheel.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def visible_parts(path: Path) -> list[tuple[str, str, int]]:
    with Store.open(path, create=False) as st:
        return sorted((p.table, p.sha256, p.rows) for p in st.parts())


def snapshot(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_mtime_ns for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def round_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("round") / "store"
    result = flywheel("run-round", "--store", str(path), "--problems", "6", "--families", FAMILIES, "--seed", "7",
                      "--workers", "2", "--format", "json")
    assert result.returncode == 0, result.stderr
    return path, json.loads(result.stdout)


def test_round_stores_problems_attempts_and_executions(round_store: tuple[Path, dict]) -> None:
    path, summary = round_store
    assert summary["status"] == "new" and summary["round"] == 1
    assert sum(f["generated"] for f in summary["families"]) == 6
    assert {f["family"] for f in summary["families"]} == set(FAMILIES.split(","))
    with Store.open(path, create=False) as st:
        assert st.count("problems") == 6 and st.count("round_items") == 6
        samples = st.query("SELECT * FROM samples ORDER BY attempt_id").to_pylist()
        assert len(samples) == 6
        # Rotating APIs: six items cover all five renderers (item i gets APIS[i % 5]).
        assert {s["api"] for s in samples} == {"gurobipy", "pyomo", "ortools", "coptpy", "docplex"}
        for s in samples:
            assert s["policy"] == "reference" and s["label_source"] == "generator"
            assert s["exec_status"] is not None  # every attempt ran
            assert not s["disputed"]
            assert s["generator_code_hash"] and s["params_json"] and s["round_config_hash"]
        env = json.loads(samples[0]["env_json"])
        assert env["packages"]["duckdb"] and env["python"] and "ground_truth" in env["tolerances"]
        lineage = json.loads(st.scalar("SELECT lineage_json FROM attempts LIMIT 1"))
        assert {"generator", "policy", "env", "round_config_hash"} <= lineage.keys()
        rounds = st.query("SELECT * FROM rounds").to_pylist()
        assert len(rounds) == 1 and rounds[0]["status"] == "finished"
        # Every ground-truth objective of a verified optimal problem is finite and the IR survives the trip.
        for p in st.query("SELECT * FROM problems").to_pylist():
            assert p["ir_json"] and p["formulation"] and p["question"]
            assert p["gt_status"] in {"optimal", "infeasible"}


def test_rerun_of_a_finished_round_adds_nothing(round_store: tuple[Path, dict], capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = round_store
    before = visible_parts(path)
    code, out, err = flywheel_here(capsys, monkeypatch, "run-round", "--store", str(path), "--problems", "6",
                                   "--families", FAMILIES, "--seed", "7", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["status"] == "complete"
    assert visible_parts(path) == before  # (the session may delete parts an earlier compaction superseded)


def test_sql_formats(round_store: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = round_store
    q = "select family, count(*) as n from problems group by 1 order by 1"
    code, out, err = flywheel_here(capsys, monkeypatch, "sql", "--store", str(path), "--format", "json", q)
    assert code == 0, err
    assert json.loads(out) == [{"family": "blending", "n": 2}, {"family": "diet", "n": 2},
                               {"family": "production_planning", "n": 2}]
    code, out, _ = flywheel_here(capsys, monkeypatch, "sql", "--store", str(path), "--format", "csv", q)
    assert out.splitlines()[0] == '"family","n"' and len(out.splitlines()) == 4
    dest = tmp_path / "r.parquet"
    code, _, _ = flywheel_here(capsys, monkeypatch, "sql", "--store", str(path), "--format", "parquet", "--out",
                               str(dest), q)
    assert code == 0 and pq.read_table(dest).num_rows == 3
    code, out, _ = flywheel_here(capsys, monkeypatch, "sql", "--store", str(path), q)
    assert "production_planning" in out


@pytest.mark.parametrize("args, culprit", [
    (["run-round", "--families", "diet,nosuchfamily"], "nosuchfamily"),
    (["run-round", "--problems", "0"], "problems"),
    (["run-round", "--problems", "-3"], "problems"),
    (["run-round", "--api", "cplexx"], "cplexx"),
    (["run-round", "--config", "{bad_toml}"], "bad.toml"),
    (["run-round", "--config", "{unknown_key_toml}"], "problemz"),
    (["sql", "select nope from problems"], "nope"),
    (["sql", "--format", "xml", "select 1"], "xml"),
])
def test_bad_input_is_one_line_exit_2_and_touches_nothing(round_store: tuple[Path, dict], tmp_path: Path,
                                                          args: list[str], culprit: str,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = round_store
    bad = tmp_path / "bad.toml"
    bad.write_text("[round\nproblems = 3\n")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[round]\nproblemz = 3\n")
    args = [a.format(bad_toml=bad, unknown_key_toml=unknown) for a in args]
    before = snapshot(path)
    code, out, err = flywheel_here(capsys, monkeypatch, *args[:1], "--store", str(path), *args[1:])
    assert code == 2, out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and culprit in lines[0], err
    assert snapshot(path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_store_is_refused(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    result = flywheel("run-round", "--store", str(ro / "store"), "--problems", "1")
    assert result.returncode == 2 and str(ro) in result.stderr
    assert list(ro.iterdir()) == []


def test_sql_on_a_missing_store_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = flywheel_here(capsys, monkeypatch, "sql", "--store", str(tmp_path / "none"), "select 1")
    assert code == 2 and "none" in err
    assert not (tmp_path / "none").exists()


def test_store_path_under_a_file_is_refused_even_for_root(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("not a directory")
    code, _, err = flywheel_here(capsys, monkeypatch, "run-round", "--store", str(blocker / "store"),
                                 "--problems", "1")
    assert code == 2 and "plain-file" in err and len(err.strip().splitlines()) == 1
    assert blocker.read_text() == "not a directory"
