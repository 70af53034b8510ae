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
_FIELD = re.compile(r"\S+")


def mps_names(names: list[str], reserved: frozenset[str] = frozenset()) -> list[str]:
    """Each whitespace character becomes ``_`` (as OR-Tools writes it; HiGHS too, for spaces); a name that then
    collides with another (or with a reserved one, the objective row ``obj``), and a repeat of a name, gets ``~2``,
    ``~3``, ... Names that need no change stay as they are (the first of repeated ones too)."""
    taken = set(reserved) | {n for n in names if n and not _SPACE.search(n)}
    out: list[str] = []
    kept: set[str] = set()
    for n in names:
        if n and not _SPACE.search(n) and n not in reserved and n not in kept:
            out.append(n)
            kept.add(n)
            continue
        base = _SPACE.sub("_", n) or "_"
        cand, k = base, 1
        while cand in taken:
            k += 1
            cand = f"{base}~{k}"
        taken.add(cand)
        out.append(cand)
    return out


def respace(mps: str, columns: list[str], rows: list[str]) -> str:
    """``mps`` as written by a writer that keeps spaces in names (docplex), with each column and row name that has
    whitespace, found as a whole run of fields, replaced by its ``mps_names`` form. The names of both kinds are
    renamed as one list, so a string that names a column and a row becomes one name wherever it stands (the rewrite
    is textual), unique among all names; longer names first, so "Old Mill East" is not cut at "Old Mill"."""
    names = list(dict.fromkeys([*columns, *rows]))
    fixed = {old: new for old, new in zip(names, mps_names(names), strict=True) if old != new}
    if not fixed:
        return mps
    # A name is a run of whole fields: at each field, look up the runs of up to ``longest`` fields that start there,
    # longest first (a regex alternation of thousands of names would try each one at every position of the text).
    longest = max(len(_FIELD.findall(n)) for n in fixed)
    out: list[str] = []
    for line in mps.splitlines(keepends=True):
        spans = [m.span() for m in _FIELD.finditer(line)]
        pieces: list[str] = []
        pos = i = 0
        while i < len(spans):
            for k in range(min(longest, len(spans) - i), 0, -1):
                name = line[spans[i][0]:spans[i + k - 1][1]]
                if name in fixed:
                    pieces += [line[pos:spans[i][0]], fixed[name]]
                    pos = spans[i + k - 1][1]
                    i += k
                    break
            else:
                i += 1
        out.append("".join(pieces) + line[pos:] if pieces else line)
    return "".join(out)

