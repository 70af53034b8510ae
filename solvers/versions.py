"""Installed distribution versions: the one lookup behind round lineage, ground-truth solver names and benches.

It lives below every stage (``solvers/``) because ground truth needs it and must not import from ``flywheel``.
"""

from __future__ import annotations

from importlib import metadata


def package_version(dist: str) -> str:
    """The installed version of distribution ``dist``, or ``""`` when it is not installed (callers that print
    it choose their own word for missing: ``package_version(d) or "unknown"``)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""
