"""OR benchmark test sets: cards, pull-and-cache with a hash check, and one loader for every source.

The product never ships benchmark data. ``datasets/<name>.toml`` (at the repository root) holds one card per set:
where it comes from, its licence, its item count, the sha256 of its ``test.jsonl``, how its fields map to
``(id, question, answer)``, its known label problems and which variant to prefer. ``pull`` fetches ``test.jsonl``
from a base URL (``--url``, or ``$FLYWHEEL_BENCHMARK_URL``) or a local copy (``--path``) into the cache
(``$FLYWHEEL_BENCHMARK_CACHE``, default ``~/.cache/or-flywheel/benchmarks``), and only a file whose sha256 matches
the card ever lands there. ``load_benchmark`` is what curation (decontamination) and evaluation read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flywheel.store.files import sha256_file
from solvers.config import load_toml, validate
from solvers.errors import ConfigError, FlywheelError, unknown_name
from solvers.ir import Model
from solvers.records import Record

CARDS_ENV = "FLYWHEEL_DATASETS_DIR"
CACHE_ENV = "FLYWHEEL_BENCHMARK_CACHE"
URL_ENV = "FLYWHEEL_BENCHMARK_URL"
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
    """Fetch benchmark ``name`` into the cache and return the cached file.

    The source is ``path`` (a local ``test.jsonl`` or a folder holding ``<name>/test.jsonl`` or ``test.jsonl``), else
    ``url`` (a base URL: ``{url}/{name}/test.jsonl`` is fetched), else ``$FLYWHEEL_BENCHMARK_URL``. The file is written
    to a temporary name beside its destination and renamed only after its sha256 matches the card, so a failed or
    tampered download leaves the cache exactly as it was.
    """
    card = get_card(name)
    dest = cache_dir() / name / card.file
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{card.file}.", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            if path is not None:
                src = _local_source(Path(path), card)
                with src.open("rb") as f:
                    shutil.copyfileobj(f, out)
                origin = str(src)
            else:
                base = url or os.environ.get(URL_ENV)
                if not base:
                    raise BenchmarkError(
                        f"no source for {name!r}: pass --url BASE or --path LOCAL (or set ${URL_ENV})", culprit=name
                    )
                origin = f"{base.rstrip('/')}/{name}/{card.file}"
                _download(origin, out, timeout_s)
        got = sha256_file(tmp)
        if got != card.sha256:
            raise BenchmarkError(
                f"sha256 mismatch for {origin}: got {got[:16]}…, card says {card.sha256[:16]}…; cache left unchanged",
                culprit=name,
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _local_source(path: Path, card: BenchmarkCard) -> Path:
    for candidate in (path / card.name / card.file, path / card.file, path):
        if candidate.is_file():
            return candidate
    raise BenchmarkError(f"no {card.file} at {path} (looked in {path}/{card.name}/ and {path}/)", culprit=card.name)


def _download(url: str, out: Any, timeout_s: float) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - http(s) URL given by the user
            shutil.copyfileobj(response, out)
    except urllib.error.HTTPError as exc:
        raise BenchmarkError(f"download failed: HTTP {exc.code} for {url}", culprit=url) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchmarkError(f"download failed: {reason}", culprit=url) from None


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
    if sha256_file(file) != card.sha256:
        raise BenchmarkError("cached file does not match the card's sha256; pull it again", culprit=str(file))
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


def is_cached(name: str) -> bool:
    card = get_card(name)
    file = cache_dir() / name / card.file
    return file.is_file()
