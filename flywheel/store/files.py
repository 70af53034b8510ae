"""Atomic file writes and part manifests.

A part is committed by its manifest: the Parquet file is renamed into place first, its manifest (row count, byte
size, sha256) second. A reader only ever sees parts that have a manifest, so a crash between the two renames leaves
an orphan Parquet file that nothing reads; the writer removes orphans and temp files when it next takes the lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

MANIFEST_SUFFIX = ".manifest.json"
TMP_PREFIX = ".tmp-"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in ``chunk``-byte blocks (parts and benchmark files can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename durable: fsync the directory entry (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees either the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def manifest_path(part: Path) -> Path:
    return part.with_name(part.name + MANIFEST_SUFFIX)


def part_of_manifest(manifest: Path) -> Path:
    return manifest.with_name(manifest.name[: -len(MANIFEST_SUFFIX)])


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest's content, or None if it is unreadable (treated as if the part were never committed)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and {"rows", "bytes", "sha256"} <= data.keys() else None


def looks_like_parquet(path: Path, size: int) -> bool:
    """Cheap integrity probe used on every open: the file exists, has its manifest's size and both PAR1 magics.

    Catches missing and truncated parts without reading them; a flipped byte inside needs ``store check``
    (full sha256), which then quarantines the part.
    """
    try:
        if path.stat().st_size != size or size < 8:
            return False
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(-4, os.SEEK_END)
            tail = f.read(4)
    except OSError:
        return False
    return head == b"PAR1" and tail == b"PAR1"
