"""A pure-Python reader for the plain free-format MPS files the capture's exporters write, with HiGHS's semantics.

Why: the parent re-reads every captured model (``verify.check_record``). Through HiGHS that costs a scratch file, a
``readModel``, a ``getModel`` copy and a ``clearModel`` (~0.5 ms of CPU even for a 10-column model), paid on the same two
cores the programs run on. Most captured models are small (tens to a few hundred nonzeros), and for those this reader
is ~4x cheaper (``bench/verify_mps.py``).

It is only an accelerator, never a second opinion: it gives exactly the model HiGHS 1.16's free-format reader (plus
``Highs.passModel``'s clean-up) gives for the constructs it takes, and ``None`` -- "ask HiGHS" -- for anything else.
``tests/test_sandbox_mps.py`` compares the two, field by field, on every construct below and on real captured models.

Taken, with HiGHS's meaning:

- sections NAME, OBJSENSE (``OBJSENSE MAX`` / ``MIN`` on its line, or MAX*/MIN* on the next lines), ROWS, COLUMNS,
  RHS, RANGES, BOUNDS, ENDATA, in that order, each at most once; ``*`` comment lines and blank lines;
- exactly one N row (the objective); an RHS on it is minus the objective's constant (HiGHS: ``offset = -rhs``);
- RANGES: L rows get ``[rhs - |R|, rhs]``, G rows ``[rhs, rhs + |R|]``, E rows by the sign of R (R < 0: ``[rhs - |R|,
  rhs]``, R > 0: ``[rhs, rhs + |R|]``, R = 0: unchanged);
- MARKER INTORG/INTEND blocks: integer columns that default to **binary** ``[0, 1]`` unless a BOUNDS entry (any type
  but BV) names them (HiGHS's ``kintegerVarsInColumnsAreBinary``); then ``LO 2`` alone gives ``[2, inf)``;
- a repeated matrix entry, cost, RHS, range or bound (an entry setting a side already set: "FX" then "BV", which
  gurobipy writes for a fixed binary) is ignored whole, the first one standing;
- bound types UP, LO, FX, MI, PL, FR, BV, LI, UI. UP with a negative value leaves the lower bound at what it is
  (0 by default: an empty range, as HiGHS 1.16 reads it); zero coefficients are dropped;
- ``passModel``'s clean-up: bounds at or beyond 1e20 are infinite.

Not taken (``None``): anything outside the printable ASCII (tabs, CR, non-ASCII names), fixed-format layouts, any
other section (QUADOBJ, QMATRIX, QCMATRIX, QSECTION, CSECTION, SOS, SETS, INDICATORS, GENCONS, OBJSENS, RANGES before
RHS, ...), OBJSENSE followed by anything but MAX / MIN on its line, SC/SI bounds, a value after MI/PL/FR/BV, free N
rows beyond the objective, no objective row, duplicated row or column names (HiGHS then drops all names), a column
whose entries are not contiguous, names an entry uses but no section defined, bound or RHS lines in the SIF layouts
HiGHS guesses at, numbers other than plain decimals (``D`` exponents, ``inf``, hex, digit separators), coefficients
HiGHS would drop or reject (0 < |a| <= 1e-8, |a| >= 1e15), and any other number of magnitude 1e15 or more that HiGHS
does not simply call infinite.

The semantics are HiGHS 1.16's (the installed highspy); the construct tests compare against whatever highspy is
installed, so an upgrade that reads a construct differently fails them rather than changing a verdict silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

INF = math.inf
# HiGHS's passModel: a bound at or beyond infinite_bound (1e20) is infinite.
_INFINITE_BOUND = 1e20
# Magnitudes where HiGHS's clean-up (matrix entries: dropped at <= small_matrix_value 1e-9, rejected at >=
# large_matrix_value 1e15; costs and bounds near infinite_cost / infinite_bound 1e20) could change the model: left to
# HiGHS, with a margin around each threshold.
_SMALL_ENTRY = 1e-8
_LARGE = 1e15
# HiGHS's section keywords (HMpsFF::checkFirstWord). The first five are keywords even with text after them.
_ALWAYS_KEYWORDS = {"NAME", "OBJSENSE", "QCMATRIX", "QSECTION", "CSECTION"}
_KEYWORDS = _ALWAYS_KEYWORDS | {"ROWS", "COLUMNS", "RHS", "BOUNDS", "RANGES", "QMATRIX", "QUADOBJ", "DELAYEDROWS",
                                "MODELCUTS", "USERCUTS", "INDICATORS", "SETS", "SOS", "GENCONS", "PWLOBJ", "PWLNAM",
                                "PWLCON", "ENDATA"}
_ORDER = {"OBJSENSE": 1, "ROWS": 2, "COLUMNS": 3, "RHS": 4, "RANGES": 5, "BOUNDS": 6, "ENDATA": 7}
_COLUMNS = _ORDER["COLUMNS"]
# bound type -> (sets lower, sets upper, integer, takes a value)
_BOUNDS = {"UP": (False, True, False, True), "LO": (True, False, False, True), "FX": (True, True, False, True),
           "LI": (True, False, True, True), "UI": (False, True, True, True), "MI": (True, False, False, False),
           "PL": (False, True, False, False), "FR": (True, True, False, False), "BV": (True, True, True, False)}


class _Unsure(Exception):
    """The text holds something this reader does not mirror exactly: HiGHS reads it instead."""


@dataclass
class MpsModel:
    """What ``Highs.getModel().lp_`` holds after reading the same text. ``columns[j]``: column j's (row, value)
    entries in the order HiGHS keeps them (the file's); ``start`` / ``index`` / ``value`` give them as HiGHS's
    column-wise matrix."""

    col_names: list[str]
    col_lower: list[float]
    col_upper: list[float]
    col_cost: list[float]
    integer: list[bool]
    row_names: list[str]
    row_lower: list[float]
    row_upper: list[float]
    columns: list[list[tuple[int, float]]]
    offset: float
    maximize: bool
    # A quadratic objective (from HiGHS's reader only: ``parse`` leaves QUADOBJ/QMATRIX to it): coef * x_i * x_j
    # with i <= j, the objective being c·x + this + offset.
    quad: dict[tuple[int, int], float] = field(default_factory=dict)

    @property
    def start(self) -> list[int]:
        out = [0]
        for column in self.columns:
            out.append(out[-1] + len(column))
        return out

    @property
    def index(self) -> list[int]:
        return [i for column in self.columns for i, _ in column]

    @property
    def value(self) -> list[float]:
        return [a for column in self.columns for _, a in column]


def read(text: str) -> MpsModel | None:
    """The project's one MPS reader: the model HiGHS reads from ``text`` (quadratic objectives included), by the fast
    pure-Python path (``parse``) where it is certain to agree with HiGHS, else by HiGHS itself; None when HiGHS
    cannot read it. Used by the sandbox's verification and by structural equivalence (``contracts.equivalence``)."""
    model = parse(text)
    return model if model is not None else from_highs(text)


def from_highs(text: str) -> MpsModel | None:
    """``text`` read by HiGHS's own reader, as an ``MpsModel`` (None when HiGHS cannot read it)."""
    from solvers.sandbox.verify.highs import _highs, _load  # the parent's HiGHS instance (verify imports this module)

    h = _highs()
    if h is None or not _load(h, text):
        return None
    try:
        model = h.getModel()
        return _model_of(model.lp_, model.hessian_)
    except Exception:  # noqa: BLE001 - a model HiGHS holds in a form this does not convert
        return None
    finally:
        h.clearModel()


def _model_of(lp: Any, hessian: Any) -> MpsModel:
    n, m = int(lp.num_col_), int(lp.num_row_)
    names = list(lp.col_names_) if len(lp.col_names_) == n else [f"c{j}" for j in range(n)]
    rows = list(lp.row_names_) if len(lp.row_names_) == m else [f"r{i}" for i in range(m)]
    integrality = [int(v) for v in lp.integrality_] if len(lp.integrality_) else [0] * n
    mat = lp.a_matrix_
    start, index, value = list(mat.start_), list(mat.index_), list(mat.value_)
    columns: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    if int(mat.format_) == 1 or not start or len(start) == n + 1:  # MatrixFormat.kColwise
        for j in range(n):
            columns[j] = [(int(index[k]), float(value[k])) for k in range(start[j], start[j + 1])]
    else:  # row-wise
        for i in range(m):
            for k in range(start[i], start[i + 1]):
                columns[int(index[k])].append((i, float(value[k])))
    quad: dict[tuple[int, int], float] = {}
    if int(hessian.dim_) > 0:
        hs, hi, hv = list(hessian.start_), list(hessian.index_), list(hessian.value_)
        square = int(hessian.format_) == 2  # HessianFormat.kSquare: both triangles listed
        for j in range(int(hessian.dim_)):
            for k in range(hs[j], hs[j + 1]):
                i, q = int(hi[k]), float(hv[k])
                key = (min(i, j), max(i, j))
                # the objective is 0.5 x'Qx: a diagonal entry gives 0.5 Q_jj x_j^2; an off-diagonal pair, listed once
                # (triangular) or twice (square), gives Q_ij x_i x_j
                weight = 0.5 if (i == j or square) else 1.0
                quad[key] = quad.get(key, 0.0) + weight * q
        quad = {k: q for k, q in quad.items() if q != 0.0}  # HiGHS keeps a zero on every diagonal it stores
    return MpsModel(names, [float(v) for v in lp.col_lower_], [float(v) for v in lp.col_upper_],
                    [float(v) for v in lp.col_cost_], [v == 1 for v in integrality], rows,
                    [float(v) for v in lp.row_lower_], [float(v) for v in lp.row_upper_], columns,
                    float(lp.offset_), int(lp.sense_) == -1, quad)


def parse(text: str) -> MpsModel | None:
    """The model HiGHS would read from ``text``, or None when this reader is not certain to agree with HiGHS."""
    if not (text.isascii() and text.replace("\n", "").isprintable()):  # only printable ASCII and newlines
        return None
    try:
        return _read(text)
    except (_Unsure, ValueError):  # ValueError: a number float() cannot read
        return None


def _number(token: str) -> float:
    """A plain decimal number, as glibc's strtod (HiGHS's atof) reads it: both round correctly. What float() takes
    and strtod reads otherwise or not at all (inf, nan, digit separators) is left to HiGHS; what float() refuses
    raises ValueError (``parse`` returns None)."""
    value = float(token)
    if value - value != 0.0 or "_" in token:  # inf, nan; 1_000
        raise _Unsure(token)
    return value


def _read(text: str) -> MpsModel:
    """HiGHS's free-format parse (HMpsFF), its loadProblem and passModel's bound clean-up, for the constructs in the
    module docstring; _Unsure for anything else. One function over local variables, section by section: it runs once
    per captured record on the parent's cores, and attribute lookups per line would cost a third of it."""
    maximize, objective, offset = False, "", 0.0
    row_of: dict[str, int] = {}  # constraint rows (the objective is ``objective``)
    row_type: list[str] = []
    row_lower: list[float] = []
    row_upper: list[float] = []
    col_of: dict[str, int] = {}
    col_names: list[str] = []
    cost: list[float] = []
    integer: list[bool] = []
    columns: list[list[tuple[int, float]]] = []
    lower: list[float] = []  # set up when COLUMNS ends
    upper: list[float] = []
    binary: list[bool] = []  # integer columns of a MARKER block stay binary until a BOUNDS entry names them
    integral = False  # inside a MARKER INTORG / INTEND block
    column, entries, in_column = "", [], set()  # the column being read, its entries and their rows
    has_rhs: set[str] = set()
    has_range: set[int] = set()
    has_lower: set[int] = set()
    has_upper: set[int] = set()
    section, stage, first = "", 0, True
    for line in text.split("\n"):
        if not line or line[0] == "*":
            continue
        tokens = line.split()
        n = len(tokens)
        if not n:
            continue
        # A keyword alone on its line starts a section, and so do the five always-keywords (4 or 8 letters long)
        # with anything after them; any other line is data, whatever its first word (HiGHS's checkFirstWord).
        if n == 1 or len(tokens[0]) in (4, 8):
            word = tokens[0].upper()
            if word in _ALWAYS_KEYWORDS or (n == 1 and len(word) > 1 and (
                    word in _KEYWORDS or word.startswith(("MAX", "MIN")))):
                if word == "NAME":
                    if not first:
                        raise _Unsure("NAME not first")
                    section = "NAME"
                elif section == "OBJSENSE" and word.startswith(("MAX", "MIN")):
                    maximize = word.startswith("MAX")
                else:
                    order = _ORDER.get(word, 0)  # 0: a section this reader does not take
                    if order <= stage or (order > _COLUMNS and stage < _COLUMNS) \
                            or (order == _COLUMNS and stage != _COLUMNS - 1):
                        raise _Unsure(f"section {word}")
                    if word == "OBJSENSE" and n > 1:
                        sense = tokens[1].upper()
                        if n > 2 or sense not in ("MAX", "MIN"):
                            raise _Unsure("OBJSENSE line")
                        maximize = sense == "MAX"
                    elif word == "COLUMNS" and not objective:
                        raise _Unsure("no objective row")
                    if stage == _COLUMNS:  # COLUMNS ends: every column has its default bounds
                        lower, upper, binary = [0.0] * len(col_names), [INF] * len(col_names), list(integer)
                    section, stage = word, order
                first = False
                continue
        first = False
        if section == "COLUMNS":
            if n >= 2 and tokens[1] == "'MARKER'":
                if n != 3 or tokens[2] != ("'INTEND'" if integral else "'INTORG'"):
                    raise _Unsure("MARKER line")
                integral = not integral
                continue
            if n != 3 and n != 5:
                raise _Unsure("COLUMNS line")
            name = tokens[0]
            if name != column:
                if name in col_of:
                    raise _Unsure("column reappears")  # HiGHS: a second column of that name, all names dropped
                column = name
                col_of[name] = len(col_names)
                col_names.append(name)
                cost.append(0.0)
                integer.append(integral)
                entries, in_column = [], set()
                columns.append(entries)
            for k in (1, 3) if n == 5 else (1,):
                row, value = tokens[k], _number(tokens[k + 1])
                if row == objective:
                    if value and not cost[-1]:  # a repeated cost is ignored (HiGHS warns)
                        cost[-1] = value
                    continue
                i = row_of.get(row)
                if i is None:
                    raise _Unsure("unknown row in COLUMNS")  # HiGHS: ignored, or fixed format
                if value and i not in in_column:  # a zero is dropped; a repeated entry is ignored (HiGHS warns)
                    in_column.add(i)
                    entries.append((i, value))
        elif section == "BOUNDS":
            spec = _BOUNDS.get(tokens[0])
            if spec is None:
                raise _Unsure(f"bound type {tokens[0]}")
            sets_lower, sets_upper, sets_integer, valued = spec
            if n != (4 if valued else 3) or tokens[1] in col_of:
                raise _Unsure("BOUNDS line")  # a column name second: HiGHS reads it as SIF (no set name)
            j = col_of.get(tokens[2])
            if j is None:
                raise _Unsure("unknown column in BOUNDS")  # HiGHS would add a column
            if (sets_lower and j in has_lower) or (sets_upper and j in has_upper):
                continue  # ignored whole (HiGHS warns): gurobipy's "FX 0" then "BV" leaves a continuous [0, 0]
            if sets_lower:
                has_lower.add(j)
            if sets_upper:
                has_upper.add(j)
            if not valued:
                if tokens[0] == "BV":
                    integer[j], binary[j], upper[j] = True, True, 1.0
                else:
                    binary[j] = False
                    if sets_lower:
                        lower[j] = -INF
                    if sets_upper:
                        upper[j] = INF
                continue
            value = _number(tokens[3])
            if sets_integer:
                integer[j] = True
            if sets_lower:
                lower[j] = value
            if sets_upper:
                upper[j] = value
            binary[j] = False
        elif section == "ROWS":
            if n != 2 or tokens[0] not in ("N", "L", "G", "E"):
                raise _Unsure("ROWS line")
            kind, name = tokens
            if name in row_of or name == objective:
                raise _Unsure("duplicate row name")  # HiGHS: all row names dropped
            if kind == "N":
                if objective:
                    raise _Unsure("a second N row")
                objective = name
                continue
            row_of[name] = len(row_type)
            row_type.append(kind)
            row_lower.append(-INF if kind == "L" else 0.0)
            row_upper.append(INF if kind == "G" else 0.0)
        elif section == "RHS":
            if (n != 3 and n != 5) or tokens[0] in row_of or tokens[0] == objective:
                raise _Unsure("RHS line")  # a row name first: HiGHS reads it as SIF (no set name)
            for k in (1, 3) if n == 5 else (1,):
                row, value = tokens[k], _number(tokens[k + 1])
                if row in has_rhs:
                    continue  # a repeated RHS is ignored (HiGHS warns)
                has_rhs.add(row)
                if row == objective:
                    offset = -value  # HiGHS: the objective's RHS is minus its constant
                    continue
                i = row_of.get(row)
                if i is None:
                    raise _Unsure("unknown row in RHS")
                if row_type[i] != "G":
                    row_upper[i] = value
                if row_type[i] != "L":
                    row_lower[i] = value
        elif section == "RANGES":
            if n != 3 and n != 5:
                raise _Unsure("RANGES line")
            for k in (1, 3) if n == 5 else (1,):
                i, value = row_of.get(tokens[k]), _number(tokens[k + 1])
                if i is None:
                    raise _Unsure("RANGES row")  # unknown, or the objective: HiGHS ignores it
                if i in has_range:
                    continue  # a repeated range is ignored (HiGHS warns)
                has_range.add(i)
                kind = row_type[i]
                if kind == "L" or (kind == "E" and value < 0):
                    row_lower[i] = row_upper[i] - abs(value)
                elif kind == "G" or (kind == "E" and value > 0):
                    row_upper[i] = row_lower[i] + abs(value)
        else:
            raise _Unsure(f"a data line in section {section or 'none'}")
    if section != "ENDATA" or integral:
        raise _Unsure("no ENDATA, or an open MARKER block")
    for j, is_binary in enumerate(binary):
        if is_binary:
            lower[j], upper[j] = 0.0, 1.0
    for entries in columns:
        for _, a in entries:
            if not _SMALL_ENTRY < abs(a) < _LARGE:
                raise _Unsure("a coefficient HiGHS drops or rejects")
    if any(abs(c) >= _LARGE for c in cost) or abs(offset) >= _LARGE:
        raise _Unsure("huge cost")
    return MpsModel(col_names, _lower(lower), _upper(upper), cost, integer, list(row_of), _lower(row_lower),
                    _upper(row_upper), columns, offset, maximize)


def _lower(values: list[float]) -> list[float]:
    """Lower bounds as passModel leaves them: at or below -1e20, -inf; other huge values are left to HiGHS."""
    out = []
    for v in values:
        if not -_LARGE < v < _LARGE and v != -INF:
            if v > -_INFINITE_BOUND:
                raise _Unsure("huge lower bound")
            v = -INF
        out.append(v)
    return out


def _upper(values: list[float]) -> list[float]:
    """Upper bounds as passModel leaves them: at or above 1e20, inf; other huge values are left to HiGHS."""
    out = []
    for v in values:
        if not -_LARGE < v < _LARGE and v != INF:
            if v < _INFINITE_BOUND:
                raise _Unsure("huge upper bound")
            v = INF
        out.append(v)
    return out
