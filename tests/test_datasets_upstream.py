"""`flywheel datasets pull NAME` with no flags: the card's upstream file, from a real HTTP server on 127.0.0.1.

Each card's upstream host is redirected to the local server with $FLYWHEEL_UPSTREAM_REWRITE (the real URLs stay the
default). The served files are small ones written here in each upstream's own format (JSON lines with
en_question/en_answer, MAMO's Question/Answer/Type JSON lines, OptiMind's CSV with list-valued answers), so the
tests need no benchmark copy.
"""

from __future__ import annotations

import csv
import functools
import http.server
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from flywheel import benchmarks

REPO = Path(__file__).resolve().parents[1]


def _upstream_file(card: benchmarks.BenchmarkCard, salt: str = "") -> tuple[bytes, int]:
    """A small file in the card's upstream format: (bytes, items a correct conversion keeps)."""
    up = card.upstream
    assert up is not None
    rows = [
        {up.question: f"A factory makes chairs and tables{salt}. Maximise profit.", up.answer: "1160.0"},
        {up.question: "Pills need filler; at least 60% must be small.", up.answer: "No Best Solution"},
        {up.question: "Ship containers from 6 warehouses to 5 ports.", up.answer: "[18.0, 19.5]" if up.format == "csv"
         else 904590},
        {up.question: "", up.answer: ""},  # an empty upstream row (OptiMind's CSVs have two) is dropped
    ]
    for i, r in enumerate(rows):
        for target, field in up.extra.items():
            r[field] = "['Diet Problem']" if target == "problem_class" else (i + 1 if field == "id" else "easy_lp")
    if up.format == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue().encode(), 3
    if up.format == "json":
        return json.dumps(rows).encode(), 3
    return "".join(json.dumps(r) + "\n" for r in rows).encode(), 3


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A local server holding every card's upstream file at its raw.githubusercontent.com path."""
    root = tmp_path / "upstream"
    for card in benchmarks.load_cards().values():
        path = root / urlparse(benchmarks.upstream_fetch_url(card.upstream.url)).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_upstream_file(card)[0])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv(benchmarks.REWRITE_ENV, f"https://raw.githubusercontent.com={base}")
    monkeypatch.setenv(benchmarks.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(benchmarks.URL_ENV, raising=False)
    yield base, root
    server.shutdown()
    server.server_close()


def test_real_urls_are_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(benchmarks.REWRITE_ENV, raising=False)
    card = benchmarks.get_card("nl4opt")
    assert card.upstream.url == card.source_urls[0]  # the pinned commit the card cites
    assert benchmarks.upstream_fetch_url(card.upstream.url) == (
        "https://raw.githubusercontent.com/optsuite/OptMATH/f15bbc4477c70db85ad148df8bcc1b780bca0f8c/benchmark/NL4OPT.json")
    for c in benchmarks.load_cards().values():
        assert c.upstream is not None and c.upstream.url in c.source_urls, c.name
        assert "/blob/" in c.upstream.url and len(c.upstream.url.split("/blob/")[1].split("/")[0]) == 40, c.name


@pytest.mark.parametrize("name", sorted(benchmarks.load_cards()))
def test_pull_converts_every_card_from_its_upstream_format(name: str, upstream: tuple[str, Path]) -> None:
    card = benchmarks.get_card(name)
    dest = benchmarks.pull(name)
    items = benchmarks.load_benchmark(name)
    assert len(items) == _upstream_file(card)[1]
    assert [i.id for i in items] == [f"{name}-0", f"{name}-1", f"{name}-2"]  # id = position in the upstream file
    assert items[0].answer == 1160.0 and items[0].meta["answer_status"] == "numeric"
    assert items[1].answer == "infeasible" and items[1].meta["answer_status"] == "infeasible_text"
    if card.upstream.format == "csv":  # OptiMind: a list answer; any of its values counts
        assert items[2].answer == 18.0 and list(items[2].answers_accepted or items[2].meta["answers_accepted"]) == [
            18.0, 19.5]
        assert items[0].meta["problem_class"] == ["Diet Problem"]
    else:
        assert items[2].answer == 904590.0
    for target in card.upstream.extra:
        assert target in items[0].meta
    source = benchmarks.cache_source(name)
    assert source["origin"] == "upstream" and source["upstream_url"] == card.upstream.url
    assert source["fetched_from"].startswith(upstream[0]) and len(source["upstream_sha256"]) == 64
    assert source["upstream_sha256_pinned_by"] == "this pull (first use)"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["source.json", "test.jsonl"]


def test_first_pull_pins_the_hash_and_a_changed_upstream_is_refused(upstream: tuple[str, Path]) -> None:
    _, root = upstream
    card = benchmarks.get_card("nl4opt")
    dest = benchmarks.pull("nl4opt")
    before = dest.read_bytes()
    assert benchmarks.pull("nl4opt").read_bytes() == before  # same bytes again: accepted
    source_before = benchmarks.cache_source("nl4opt")
    assert source_before["upstream_sha256_pinned_by"] == "first pull"
    served = root / urlparse(benchmarks.upstream_fetch_url(card.upstream.url)).path.lstrip("/")
    served.write_bytes(_upstream_file(card, salt=" (edited)")[0])  # a file changed under a pinned commit
    with pytest.raises(benchmarks.BenchmarkError, match="sha256 mismatch for http://127.0.0.1"):
        benchmarks.pull("nl4opt")
    assert dest.read_bytes() == before and benchmarks.cache_source("nl4opt") == source_before


def test_card_hash_is_checked_and_a_failed_download_names_the_url(
    upstream: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, root = upstream
    cards = tmp_path / "cards"
    cards.mkdir()
    for name in ("nl4opt", "optibench"):
        text = (REPO / "datasets" / f"{name}.toml").read_text()
        (cards / f"{name}.toml").write_text(text.replace('sha256 = ""', 'sha256 = "' + "0" * 64 + '"'))
    monkeypatch.setenv(benchmarks.CARDS_ENV, str(cards))
    with pytest.raises(benchmarks.BenchmarkError, match="card pinned 0000"):
        benchmarks.pull("nl4opt")
    assert not (benchmarks.cache_dir() / "nl4opt").exists()
    monkeypatch.setenv(benchmarks.CARDS_ENV, str(REPO / "datasets"))
    good = benchmarks.pull("optibench")
    before = good.read_bytes()
    card = benchmarks.get_card("optibench")
    (root / urlparse(benchmarks.upstream_fetch_url(card.upstream.url)).path.lstrip("/")).unlink()
    with pytest.raises(benchmarks.BenchmarkError, match=r"^http://127\.0\.0\.1:\d+/Cardinal-Operations/\S+: download failed: HTTP 404"):
        benchmarks.pull("optibench")
    assert good.read_bytes() == before  # the cache is as it was
    monkeypatch.setenv(benchmarks.REWRITE_ENV, "https://raw.githubusercontent.com=http://127.0.0.1:9")  # nothing there
    with pytest.raises(benchmarks.BenchmarkError, match=r"^http://127\.0\.0\.1:9/\S+: download failed"):
        benchmarks.pull("optibench")
    assert good.read_bytes() == before


def test_malformed_upstream_names_the_item(upstream: tuple[str, Path]) -> None:
    _, root = upstream
    card = benchmarks.get_card("mamo_easylp")
    served = root / urlparse(benchmarks.upstream_fetch_url(card.upstream.url)).path.lstrip("/")
    served.write_text('{"id": 1, "Question": "q", "Answer": "12", "Type": "easy_lp"}\n{"id": 2, "Question": "r"}\n')
    with pytest.raises(benchmarks.BenchmarkError, match="lacks field 'Answer'") as err:
        benchmarks.pull("mamo_easylp")
    assert err.value.culprit.endswith("item 1")


def test_cli_pull_with_no_flags(upstream: tuple[str, Path], tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "flywheel.cli", "datasets", "pull", "nl4opt"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "upstream" in done.stdout and "…" not in done.stdout.replace("sha256 …", "")
    assert "3 items from upstream, the card's curated copy has 245" in done.stderr
    js = subprocess.run([sys.executable, "-m", "flywheel.cli", "datasets", "pull", "nl4opt", "--format", "json"],
                        capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    summary = json.loads(js.stdout)
    assert summary["origin"] == "upstream" and summary["items"] == 3
    assert summary["upstream_sha256_pinned_by"] == "first pull"
