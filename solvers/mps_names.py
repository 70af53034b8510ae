"""Names that free-format MPS can carry.

MPS fields are separated by whitespace, so a name with a space (a site called "Old Mill") is read as two fields and
shifts every entry after it. HiGHS, OR-Tools and COPT write such a name with ``_`` for each space, Gurobi drops
every name once one has a space, docplex writes the space as it is (which no free-format reader can split).
``IR.to_mps`` and the docplex capture write names the OR-Tools way, through ``mps_names``, and the parent's
verification matches a solution's names to them the same way.
"""

from __future__ import annotations

import re

_SPACE = re.compile(r"\s")


def mps_names(names: list[str], reserved: frozenset[str] = frozenset()) -> list[str]:
    """Each whitespace character becomes ``_`` (as OR-Tools writes it; HiGHS too, for spaces); a name that then
    collides with another (or with a reserved one, the objective row ``obj``) gets ``~2``, ``~3``, ... Names that
    need no change stay as they are."""
    taken = set(reserved) | {n for n in names if n and not _SPACE.search(n)}
    out: list[str] = []
    for n in names:
        if n and not _SPACE.search(n) and n not in reserved:
            out.append(n)
            continue
        base = mps_label(n) or "_"
        cand, k = base, 1
        while cand in taken:
            k += 1
            cand = f"{base}~{k}"
        taken.add(cand)
        out.append(cand)
    return out


def mps_label(name: str) -> str:
    """``name`` as a writer that replaces whitespace writes it (the match a solution's names need)."""
    return _SPACE.sub("_", name)


def respace(mps: str, columns: list[str], rows: list[str]) -> str | None:
    """``mps`` as written by a writer that keeps spaces in names (docplex), with each column and row name that has
    whitespace, found as a whole run of fields, replaced by its ``mps_names`` form (columns and rows are separate
    name spaces, as in MPS). Longer names first, so "Old Mill East" is not cut at "Old Mill". None when a text
    rewrite cannot be exact: a name with whitespace that is both a column and a row and would be written two ways."""
    fixed: dict[str, str] = {}
    for names in (columns, rows):
        for old, new in zip(names, mps_names(names), strict=True):
            if old != new:
                if fixed.setdefault(old, new) != new:
                    return None
    if not fixed:
        return mps
    pattern = re.compile(r"(?<!\S)(?:" + "|".join(re.escape(n) for n in sorted(fixed, key=len, reverse=True))
                         + r")(?!\S)")
    return pattern.sub(lambda m: fixed[m.group(0)], mps)
