"""Benchmark cards, `flywheel datasets pull` against a real HTTP server on 127.0.0.1, the cache and the loader.

The product never vendors benchmark data; these tests read the shared copy (../shared/benchmarks) as the "remote".
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_here import flywheel_here

from flywheel import benchmarks
from solvers.errors import UnknownNameError

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="shared benchmark copy not present")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def server() -> Iterator[str]:
    srv, url = _serve(SHARED)
    yield url
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(benchmarks.CACHE_ENV, str(d))
    monkeypatch.delenv(benchmarks.URL_ENV, raising=False)
    return d


def test_every_card_matches_the_shared_copy() -> None:
    cards = benchmarks.load_cards()
    assert set(cards) == {p.name for p in SHARED.iterdir() if (p / "test.jsonl").is_file()}
    for name, card in cards.items():
        data = (SHARED / name / "test.jsonl").read_bytes()
        assert hashlib.sha256(data).hexdigest() == card.sha256, name
        assert sum(1 for line in data.splitlines() if line.strip()) == card.items, name
        assert card.recommended_variant in cards, name
        assert card.source_urls and all(u.startswith("https://github.com/") for u in card.source_urls), name


def test_pull_over_http_caches_and_loads(server: str, cache: Path) -> None:
    dest = benchmarks.pull("mamo_complexlp_optimind", url=server)
    assert dest == cache / "mamo_complexlp_optimind" / "test.jsonl"
    assert dest.read_bytes() == (SHARED / "mamo_complexlp_optimind" / "test.jsonl").read_bytes()
    items = benchmarks.load_benchmark("mamo_complexlp_optimind")
    assert len(items) == 210
    first = json.loads((SHARED / "mamo_complexlp_optimind" / "test.jsonl").read_text().splitlines()[0])
    assert (items[0].id, items[0].question, items[0].answer) == (first["id"], first["question"], first["answer"])
    assert list(items[0].answers_accepted) == first["answers_accepted"]
    assert "answers_accepted" not in items[0].meta and items[0].meta["problem_class"] == first["problem_class"]
    assert sorted(p.name for p in dest.parent.iterdir()) == ["source.json", "test.jsonl"]  # no temp files left


def test_hash_mismatch_is_refused_and_cache_untouched(tmp_path: Path, server: str, cache: Path) -> None:
    good = benchmarks.pull("nl4opt", url=server)
    before = good.read_bytes()
    tampered = tmp_path / "remote" / "nl4opt"
    tampered.mkdir(parents=True)
    lines = (SHARED / "nl4opt" / "test.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["answer"] = 0.0  # one changed label is exactly what the hash check exists to catch
    (tampered / "test.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    bad_srv, bad_url = _serve(tmp_path / "remote")
    try:
        with pytest.raises(benchmarks.BenchmarkError, match="sha256 mismatch"):
            benchmarks.pull("nl4opt", url=bad_url)
    finally:
        bad_srv.shutdown()
        bad_srv.server_close()
    assert good.read_bytes() == before
    assert sorted(p.name for p in good.parent.iterdir()) == ["source.json", "test.jsonl"]
    with pytest.raises(benchmarks.BenchmarkError, match="sha256 mismatch"):
        benchmarks.pull("nl4opt", path=tampered)
    assert good.read_bytes() == before


def test_pull_from_local_path_and_errors(tmp_path: Path, cache: Path, server: str, monkeypatch) -> None:
    assert benchmarks.pull("optmath_bench", path=SHARED).is_file()  # folder holding <name>/test.jsonl
    copy = tmp_path / "copy.jsonl"
    shutil.copy(SHARED / "industryor_optimind" / "test.jsonl", copy)
    assert benchmarks.pull("industryor_optimind", path=copy).is_file()  # the file itself
    assert len(benchmarks.load_benchmark("industryor_optimind")) == 99
    with pytest.raises(benchmarks.BenchmarkError, match="not pulled yet"):
        benchmarks.load_benchmark("optibench")
    with pytest.raises(benchmarks.BenchmarkError, match="HTTP 404"):
        benchmarks.pull("optibench", url=server + "/nowhere")
    monkeypatch.setenv(benchmarks.REWRITE_ENV, "https://raw.githubusercontent.com=http://127.0.0.1:9")
    with pytest.raises(benchmarks.BenchmarkError, match="download failed"):  # no flags: upstream (here: nothing)
        benchmarks.pull("optibench")
    with pytest.raises(UnknownNameError, match="did you mean 'nl4opt'"):
        benchmarks.pull("nl4op", url=server)
    # A path is loaded directly (field mapping from the card named like the folder), without the cache.
    assert len(benchmarks.load_benchmark(SHARED / "optibench")) == 605


def test_cli_pull_list_and_one_line_error(tmp_path: Path, server: str, capsys, monkeypatch) -> None:
    env = {**os.environ, benchmarks.CACHE_ENV: str(tmp_path / "c")}
    ok = subprocess.run([sys.executable, "-m", "flywheel.cli", "datasets", "pull", "nl4opt", "--url", server,
                         "--format", "json"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["items"] == 245
    monkeypatch.setenv(benchmarks.CACHE_ENV, str(tmp_path / "c"))
    code, out, _ = flywheel_here(capsys, monkeypatch, "datasets", "list", "--format", "json")
    cached = {r["name"]: r["cached"] for r in json.loads(out)}
    assert code == 0 and cached["nl4opt"] is True and cached["optibench"] is False
    code, _, err = flywheel_here(capsys, monkeypatch, "datasets", "pull", "optibench", "--path", str(tmp_path))
    assert code == 2
    assert err.strip().count("\n") == 0 and "no test.jsonl" in err


