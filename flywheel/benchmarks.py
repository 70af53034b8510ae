"""OR benchmark test sets: cards, pull-and-cache with a hash check, and one loader for every source.

The product never ships benchmark data. ``datasets/<name>.toml`` (at the repository root) holds one card per set:
where it comes from, its licence, its item count, the sha256 of its ``test.jsonl``, how its fields map to
``(id, question, answer)``, its known label problems and which variant to prefer.

``pull`` has two kinds of source:

- **upstream** (the default): the card's ``[upstream]`` file at its pinned commit (a GitHub ``blob`` URL is fetched
  as its ``raw.githubusercontent.com`` twin), checked against the card's ``upstream.sha256`` when the card records
  one and otherwise pinned on the first successful pull (trust on first use: the hash is written to the cache's
  ``source.json`` and every later pull must match it), then converted with the card's ``[upstream]`` field mapping
  into ``test.jsonl``. ``$FLYWHEEL_UPSTREAM_REWRITE`` (``PREFIX=REPLACEMENT[,...]``) redirects hosts, for mirrors and
  for tests; the real URLs stay the default.
- **a curated copy**: ``{url}/{name}/test.jsonl`` (``--url``, or ``$FLYWHEEL_BENCHMARK_URL``) or a local copy
  (``--path``), kept only if its sha256 equals the card's ``sha256``.

Either way the new files are complete and verified before they replace anything, so a failed pull (a download error
names its URL) leaves the cache as it was. ``load_benchmark`` is what curation (decontamination) and evaluation read.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flywheel.store.files import atomic_write_bytes, atomic_write_json, sha256_file
from solvers.config import load_toml, validate
from solvers.errors import ConfigError, FlywheelError, unknown_name
from solvers.ir import Model
from solvers.records import Record

CARDS_ENV = "FLYWHEEL_DATASETS_DIR"
CACHE_ENV = "FLYWHEEL_BENCHMARK_CACHE"
URL_ENV = "FLYWHEEL_BENCHMARK_URL"
REWRITE_ENV = "FLYWHEEL_UPSTREAM_REWRITE"
SOURCE_FILE = "source.json"  # provenance of the cached test.jsonl: origin, URLs, sha256 of every file
DATA_FILE = "test.jsonl"
MODELS_FILE = "models.jsonl"


class BenchmarkError(FlywheelError):
    """A benchmark cannot be pulled or loaded (unknown name, bad hash, not cached, unreadable file)."""


class FieldMap(BaseModel):
    """Which source field holds each part of an item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = "id"
    question: str = "question"
    answer: str = "answer"
    answers_accepted: str | None = None  # a list of answers any of which counts as correct


class Upstream(BaseModel):
    """How to rebuild ``test.jsonl`` from the benchmark's own upstream file at a pinned commit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(pattern=r"^https?://", description="upstream file at a pinned commit (GitHub blob URLs allowed)")
    format: str = Field(pattern=r"^(jsonl|json|csv)$", description="jsonl | json (a list of objects) | csv")
    # sha256 of the upstream file. "" = not recorded on the card (nothing here can reach the real hosts to compute
    # it): the first successful pull pins it in the cache's source.json and every later pull must match.
    sha256: str = Field("", pattern=r"^([0-9a-f]{64})?$")
    question: str = Field(description="upstream field holding the question")
    answer: str = Field(description="upstream field holding the answer (a number, a list, or an infeasible text)")
    extra: dict[str, str] = Field(default_factory=dict, description="output field <- upstream field, kept as meta")


class BenchmarkCard(BaseModel):
    """Everything known about one benchmark test set, from ``datasets/<name>.toml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    description: str = ""
    licence: str
    source_urls: list[str]
    items: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    file: str = DATA_FILE
    fields: FieldMap = Field(default_factory=FieldMap)
    known_label_problems: str = ""
    recommended_variant: str = Field(description="the card to prefer for evaluation (itself, or a corrected variant)")
    variant_of: str = ""  # the benchmark this is a variant of, if any
    upstream: Upstream | None = None  # what `flywheel datasets pull NAME` fetches and converts by default


class BenchmarkItem(Record):
    """One test item, mapped to the fields evaluation and decontamination use."""

    benchmark: str
    id: str
    question: str
    answer: float | str | None  # objective value, "infeasible", or None when the source has no label
    answers_accepted: tuple[float | str, ...] = ()
    meta: dict[str, Any] = Field(default_factory=dict)  # the remaining source fields, unchanged


def cards_dir() -> Path:
    env = os.environ.get(CARDS_ENV)
    return Path(env) if env else Path(__file__).resolve().parent.parent / "datasets"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "or-flywheel" / "benchmarks"


def load_cards() -> dict[str, BenchmarkCard]:
    """Every card in ``datasets/``, by name. A malformed card is an error naming its file."""
    cards: dict[str, BenchmarkCard] = {}
    for path in sorted(cards_dir().glob("*.toml")):
        card = validate(BenchmarkCard, load_toml(path), str(path))  # errors name the file and the key
        if card.name != path.stem:
            raise ConfigError(f"card name {card.name!r} differs from its file name", culprit=str(path))
        cards[card.name] = card
    return cards


def get_card(name: str) -> BenchmarkCard:
    cards = load_cards()
    if name not in cards:
        raise unknown_name("benchmark", name, list(cards))
    return cards[name]


def cached_path(name: str) -> Path:
    return cache_dir() / name / DATA_FILE


def pull(name: str, url: str | None = None, path: str | Path | None = None, timeout_s: float = 60.0) -> Path:
    """Fetch benchmark ``name`` into the cache and return the cached ``test.jsonl``.

    The source is ``path`` (a local ``test.jsonl`` or a folder holding ``<name>/test.jsonl`` or ``test.jsonl``), else
    ``url`` (a base URL: ``{url}/{name}/test.jsonl`` is fetched), else ``$FLYWHEEL_BENCHMARK_URL``; those are curated
    copies and must match the card's ``sha256``. With none of them the card's upstream file is fetched, hash-checked
    and converted (see the module docstring). Everything is built in memory and verified before the cache is
    written, so a failed or tampered download leaves the cache exactly as it was.
    """
    card = get_card(name)
    base = url or os.environ.get(URL_ENV)
    if path is not None or base:
        if path is not None:
            src = _local_source(Path(path), card)
            data, origin = src.read_bytes(), str(src)
        else:
            origin = f"{str(base).rstrip('/')}/{name}/{card.file}"
            data = _download(origin, timeout_s)
        got = _sha256(data)
        if got != card.sha256:
            raise BenchmarkError(
                f"sha256 mismatch for {origin}: got {got[:16]}…, card says {card.sha256[:16]}…; cache left unchanged",
                culprit=name,
            )
        source = {"origin": "copy", "from": origin, "test_sha256": got, "items": _count_lines(data)}
        pin = {k: v for k, v in _read_source(name).items() if k in ("upstream_url", "upstream_sha256")}
        source.update(pin)  # a first-use upstream pin outlives a pull from a mirror
    else:
        data, source = _pull_upstream(card, timeout_s)
    dest = cache_dir() / name / card.file
    atomic_write_bytes(dest, data)
    atomic_write_json(dest.parent / SOURCE_FILE, source)
    return dest


def upstream_fetch_url(url: str) -> str:
    """The URL actually fetched for a card URL: GitHub blob pages become raw files; then ``$FLYWHEEL_UPSTREAM_REWRITE``.

    The rewrite map is ``PREFIX=REPLACEMENT`` pairs separated by commas; the first matching prefix is replaced.
    """
    m = re.match(r"^https://github\.com/([^/]+)/([^/]+)/blob/([0-9a-f]{7,40})/(.+)$", url)
    if m:
        url = f"https://raw.githubusercontent.com/{m[1]}/{m[2]}/{m[3]}/{m[4]}"
    for pair in filter(None, (p.strip() for p in os.environ.get(REWRITE_ENV, "").split(","))):
        prefix, sep, replacement = pair.partition("=")
        if not sep:
            raise ConfigError(f"rewrite entry {pair!r} is not PREFIX=REPLACEMENT", culprit=REWRITE_ENV)
        if url.startswith(prefix):
            return replacement + url[len(prefix):]
    return url


def _pull_upstream(card: BenchmarkCard, timeout_s: float) -> tuple[bytes, dict[str, Any]]:
    up = card.upstream
    if up is None:
        raise BenchmarkError(
            f"card {card.name!r} has no [upstream] section: pass --url BASE or --path LOCAL (or set ${URL_ENV})",
            culprit=card.name,
        )
    fetch = upstream_fetch_url(up.url)
    raw = _download(fetch, timeout_s)
    got = _sha256(raw)
    previous = _read_source(card.name)
    pinned_before = previous.get("upstream_sha256") if previous.get("upstream_url") == up.url else None
    expected, pin = (up.sha256, "card") if up.sha256 else (pinned_before, "first pull")
    if expected and got != expected:
        raise BenchmarkError(
            f"sha256 mismatch for {fetch}: got {got[:16]}…, {pin} pinned {expected[:16]}…; cache left unchanged",
            culprit=card.name,
        )
    rows = convert_upstream(card, raw, fetch)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    source = {
        "origin": "upstream", "upstream_url": up.url, "fetched_from": fetch, "upstream_sha256": got,
        "upstream_sha256_pinned_by": pin if expected else "this pull (first use)",
        "test_sha256": _sha256(data), "items": len(rows), "card_items": card.items,
    }
    return data, source


_INFEASIBLE = ("no best solution", "infeasible", "no feasible solution", "no solution", "unbounded")


def _parse_answer(value: Any) -> tuple[float | str | None, str, list[float | str]]:
    """(answer, answer_status, answers_accepted) of one upstream answer: a number, a list of numbers, or a text."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                pass
    if isinstance(value, list | tuple):
        parsed = [_parse_answer(v)[0] for v in value]
        accepted = [v for v in parsed if v is not None]
        if not accepted:
            return None, "missing", []
        return accepted[0], "numeric" if isinstance(accepted[0], float) else "infeasible_text", accepted
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "missing", []
    if isinstance(value, bool):
        raise ValueError(f"answer {value!r} is not a number")
    try:
        return float(value), "numeric", []
    except (TypeError, ValueError):
        if str(value).strip().lower() in _INFEASIBLE:
            return "infeasible", "infeasible_text", []
        raise ValueError(f"answer {value!r} is neither a number nor an infeasible text") from None


def _upstream_rows(raw: bytes, fmt: str, where: str) -> list[dict[str, Any]]:
    try:
        text = raw.decode("utf-8-sig")
        if fmt == "jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if fmt == "json":
            data = json.loads(text)
            if isinstance(data, dict):  # {"0": {...}, "1": {...}} or {"data": [...]}
                data = next(iter(data.values())) if len(data) == 1 and isinstance(next(iter(data.values())), list) \
                    else list(data.values())
            if not isinstance(data, list):
                raise ValueError("expected a JSON list of objects")
            return data
        return list(csv.DictReader(io.StringIO(text)))
    except (UnicodeDecodeError, ValueError, csv.Error) as exc:
        raise BenchmarkError(f"cannot read upstream {fmt}: {type(exc).__name__}: {exc}", culprit=where) from None


def convert_upstream(card: BenchmarkCard, raw: bytes, where: str = "") -> list[dict[str, Any]]:
    """Rows of ``test.jsonl`` from the raw upstream file, with the card's mapping.

    Each row: ``question``, ``answer`` (float, "infeasible" or None), ``answer_raw``, ``answer_status``,
    ``source_index`` (position in the upstream file), ``answers_accepted`` (when the upstream answer is a list), the
    card's ``extra`` fields, and ``id`` = ``{name}-{source_index}``. Rows whose question is empty are dropped.
    """
    up = card.upstream
    assert up is not None
    out: list[dict[str, Any]] = []
    for index, row in enumerate(_upstream_rows(raw, up.format, where or up.url)):
        at = f"{where or up.url} item {index}"
        if not isinstance(row, dict):
            raise BenchmarkError(f"upstream item is a {type(row).__name__}, not an object", culprit=at)
        missing = [f for f in (up.question, up.answer, *up.extra.values()) if f not in row]
        if missing:
            raise BenchmarkError(f"upstream item lacks field {missing[0]!r} (has {sorted(row)})", culprit=at)
        question = str(row[up.question] or "").strip()
        if not question:
            continue
        try:
            answer, status, accepted = _parse_answer(row[up.answer])
        except ValueError as exc:
            raise BenchmarkError(str(exc), culprit=at) from None
        item: dict[str, Any] = {"question": row[up.question], "answer": answer, "answer_raw": row[up.answer],
                                "answer_status": status, "source_index": index}
        if accepted and isinstance(row[up.answer], list | str) and str(row[up.answer]).lstrip().startswith("["):
            item["answers_accepted"] = accepted
        for target, field in up.extra.items():
            value = row[field]
            if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
                try:
                    value = ast.literal_eval(value)
                except (ValueError, SyntaxError):
                    pass
            item[target] = value
        item["id"] = f"{card.name}-{index}"
        out.append(item)
    if not out:
        raise BenchmarkError("upstream file holds no items", culprit=where or up.url)
    return out


def _read_source(name: str) -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / name / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count_lines(data: bytes) -> int:
    return sum(1 for line in data.splitlines() if line.strip())


def _local_source(path: Path, card: BenchmarkCard) -> Path:
    for candidate in (path / card.name / card.file, path / card.file, path):
        if candidate.is_file():
            return candidate
    raise BenchmarkError(f"no {card.file} at {path} (looked in {path}/{card.name}/ and {path}/)", culprit=card.name)


def _download(url: str, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - http(s) URL from the card/user
            return response.read()
    except urllib.error.HTTPError as exc:
        raise BenchmarkError(f"download failed: HTTP {exc.code}; cache left unchanged", culprit=url) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchmarkError(f"download failed: {reason}; cache left unchanged", culprit=url) from None


def load_benchmark(name_or_path: str | Path) -> list[BenchmarkItem]:
    """Items of a benchmark: a card name (read from the cache, hash-checked) or a path to a ``test.jsonl`` / folder.

    For a path, the card whose name is the folder's name supplies the field mapping if there is one; otherwise the
    standard ``id`` / ``question`` / ``answer`` fields are used.
    """
    path = Path(name_or_path)
    if path.exists():
        file = path / DATA_FILE if path.is_dir() else path
        name = (path if path.is_dir() else path.parent).name
        card = load_cards().get(name)
        return _read_items(file, name, card.fields if card else FieldMap())
    name = str(name_or_path)
    card = get_card(name)
    file = cache_dir() / name / card.file
    if not file.is_file():
        raise BenchmarkError(f"not pulled yet: run `flywheel datasets pull {name}`", culprit=str(file))
    if sha256_file(file) != expected_sha256(card):
        raise BenchmarkError("cached file does not match its recorded sha256; pull it again", culprit=str(file))
    return _read_items(file, name, card.fields)


def _read_items(file: Path, benchmark: str, fields: FieldMap) -> list[BenchmarkItem]:
    if not file.is_file():
        raise BenchmarkError("file not found", culprit=str(file))
    items: list[BenchmarkItem] = []
    with file.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                accepted = row.get(fields.answers_accepted) if fields.answers_accepted else None
                taken = {fields.id, fields.question, fields.answer, fields.answers_accepted}
                items.append(
                    BenchmarkItem(
                        benchmark=benchmark,
                        id=str(row[fields.id]),
                        question=str(row[fields.question]),
                        answer=row.get(fields.answer),
                        answers_accepted=tuple(accepted) if isinstance(accepted, list) else (),
                        meta={k: v for k, v in row.items() if k not in taken},
                    )
                )
            except (json.JSONDecodeError, KeyError, ValidationError) as exc:
                raise BenchmarkError(f"bad item: {type(exc).__name__}: {exc}", culprit=f"{file}:{line_no}") from None
    return items


def load_reference_models(name_or_path: str | Path) -> dict[str, Model]:
    """Reference models by item id: ``models.jsonl`` (rows ``{"id": ..., "ir": <IR JSON>}``) beside ``test.jsonl``.

    They enable structural decontamination. Empty where none exist: none of the sets carded in ``datasets/`` ships
    IR models today (their sources give text and objective values only), so only a local or future set uses this.
    """
    path = Path(name_or_path)
    folder = (path if path.is_dir() else path.parent) if path.exists() else cache_dir() / str(name_or_path)
    file = folder / MODELS_FILE
    if not file.is_file():
        return {}
    models: dict[str, Model] = {}
    with file.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    models[str(row["id"])] = Model.model_validate(row["ir"])
                except (json.JSONDecodeError, KeyError, ValidationError) as exc:
                    raise BenchmarkError(f"bad reference model: {exc}", culprit=f"{file}:{line_no}") from None
    return models


def expected_sha256(card: BenchmarkCard) -> str:
    """The sha256 the cached ``test.jsonl`` must have: the card's for a curated copy, the one recorded at conversion
    for a file built from upstream (its bytes are this package's conversion, not the curated copy's)."""
    source = _read_source(card.name)
    if source.get("origin") == "upstream" and source.get("test_sha256"):
        return str(source["test_sha256"])
    return card.sha256


def cache_source(name: str) -> dict[str, Any]:
    """Provenance of the cached copy (``source.json``): origin, URLs and hashes; empty if not pulled."""
    return _read_source(name)


def is_cached(name: str) -> bool:
    card = get_card(name)
    file = cache_dir() / name / card.file
    return file.is_file()
