"""A pure-Python reader for the plain free-format MPS files the capture's exporters write, with HiGHS's semantics.

Why: the parent re-reads every captured model (``verify.check_record``). Through HiGHS that costs a scratch file, a
``readModel``, a ``getModel`` copy and a ``clearModel`` (~0.75 ms even for a 10-column model), paid on the same two
cores the programs run on. Most captured models are small (tens to a few hundred nonzeros), and for those this reader
is several times cheaper (``bench/verify_mps.py``).

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
RHS, ...), SC/SI bounds, free N rows beyond the objective, no objective row, duplicated row or column names (HiGHS
then drops all names), a column whose entries are not contiguous, names an entry uses but no section defined, bound or RHS lines in the SIF
layouts HiGHS guesses at, numbers other than plain decimals (``D`` exponents, ``inf``, hex), coefficients HiGHS would
drop or reject (0 < |a| <= 1e-8, |a| >= 1e15), and any other number of magnitude 1e15 or more that HiGHS does not
simply call infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def parse(text: str) -> MpsModel | None:
    """The model HiGHS would read from ``text``, or None when this reader is not certain to agree with HiGHS."""
    if not (text.isascii() and text.replace("\n", "").isprintable()):  # only printable ASCII and newlines
        return None
    try:
        return _Reader().read(text)
    except _Unsure:
        return None


def _number(token: str) -> float:
    """A plain decimal number, as glibc's strtod (HiGHS's atof) reads it: both round correctly. Python's float()
    also takes what strtod reads otherwise or not at all (inf, nan, digit separators): those are left to HiGHS."""
    try:
        value = float(token)
    except ValueError:
        raise _Unsure(token) from None
    if value - value != 0.0 or "_" in token:  # inf, nan; 1_000
        raise _Unsure(token)
    return value


class _Reader:
    def __init__(self) -> None:
        self.maximize = False
        self.objective = ""
        self.row_of: dict[str, int] = {}  # constraint rows; the objective is self.objective
        self.row_type: list[str] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.col_of: dict[str, int] = {}
        self.col_names: list[str] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.binary: list[bool] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.entries: list[list[tuple[int, float]]] = []
        self.column = ""  # the column being read, its entries, and the rows they are in
        self.column_entries: list[tuple[int, float]] = []
        self.column_rows: set[int] = set()
        self.integral = False
        self.offset = 0.0
        self.has_rhs: set[str] = set()
        self.has_range: set[int] = set()
        self.has_lower: set[int] = set()
        self.has_upper: set[int] = set()

    def read(self, text: str) -> MpsModel:
        section, stage, first = "", 0, True
        handlers = {"ROWS": self._row, "COLUMNS": self._column, "RHS": self._rhs, "RANGES": self._range,
                    "BOUNDS": self._bound}  # any other section takes no data (after ENDATA: no section either)
        handle = self._no_data
        for line in text.split("\n"):
            if not line or line[0] == "*":
                continue
            tokens = line.split()
            if not tokens:
                continue
            # A keyword alone on its line starts a section, and so do the five always-keywords (4 or 8 letters long)
            # with anything after them; any other line is data, whatever its first word (HiGHS's checkFirstWord).
            if len(tokens) == 1 or len(tokens[0]) in (4, 8):
                word = tokens[0].upper()
                if word in _ALWAYS_KEYWORDS or (len(tokens) == 1 and len(word) > 1 and (
                        word in _KEYWORDS or word.startswith(("MAX", "MIN")))):
                    section, stage = self._section(word, tokens, section, stage, first)
                    handle = handlers.get(section, self._no_data)
                    first = False
                    continue
            first = False
            handle(tokens)
        if section != "ENDATA" or self.integral:
            raise _Unsure("no ENDATA, or an open MARKER block")
        return self._model()

    def _section(self, word: str, tokens: list[str], section: str, stage: int, first: bool) -> tuple[str, int]:
        """The section (and its stage in ``_ORDER``) that a keyword line leaves the reader in."""
        if word == "NAME":
            if not first:
                raise _Unsure("NAME not first")
            return "NAME", stage
        if section == "OBJSENSE" and word.startswith(("MAX", "MIN")):
            self.maximize = word.startswith("MAX")
            return section, stage
        if word not in _ORDER or _ORDER[word] <= stage or (word == "OBJSENSE" and stage > 0) \
                or (_ORDER[word] > _ORDER["COLUMNS"] and stage < _ORDER["COLUMNS"]) \
                or (word == "COLUMNS" and stage != _ORDER["ROWS"]):
            raise _Unsure(f"section {word}")
        if word == "OBJSENSE" and len(tokens) > 1:
            sense = tokens[1].upper()
            if len(tokens) > 2 or sense not in ("MAX", "MIN"):
                raise _Unsure("OBJSENSE line")
            self.maximize = sense == "MAX"
        elif word == "COLUMNS" and not self.objective:
            raise _Unsure("no objective row")
        return word, _ORDER[word]

    def _no_data(self, tokens: list[str]) -> None:
        raise _Unsure("a data line outside ROWS, COLUMNS, RHS, RANGES and BOUNDS")

    def _row(self, tokens: list[str]) -> None:
        if len(tokens) != 2 or tokens[0] not in ("N", "L", "G", "E"):
            raise _Unsure("ROWS line")
        kind, name = tokens
        if name in self.row_of or name == self.objective:
            raise _Unsure("duplicate row name")
        if kind == "N":
            if self.objective:
                raise _Unsure("a second N row")
            self.objective = name
            return
        self.row_of[name] = len(self.row_type)
        self.row_type.append(kind)
        self.row_lower.append(-INF if kind == "L" else 0.0)
        self.row_upper.append(INF if kind == "G" else 0.0)

    def _column(self, tokens: list[str]) -> None:
        n = len(tokens)
        if n >= 2 and tokens[1] == "'MARKER'":
            if n != 3 or tokens[2] != ("'INTEND'" if self.integral else "'INTORG'"):
                raise _Unsure("MARKER line")
            self.integral = not self.integral
            return
        if n != 3 and n != 5:
            raise _Unsure("COLUMNS line")
        name = tokens[0]
        if name != self.column:
            if name in self.col_of:
                raise _Unsure("column reappears")
            self.column = name
            self.col_of[name] = len(self.col_names)
            self.col_names.append(name)
            self.cost.append(0.0)
            self.integer.append(self.integral)
            self.binary.append(self.integral)
            self.lower.append(0.0)
            self.upper.append(INF)
            self.column_entries = []
            self.entries.append(self.column_entries)
            self.column_rows = set()
        for k in (1, 3) if n == 5 else (1,):
            row, value = tokens[k], _number(tokens[k + 1])
            if row == self.objective:
                if value and not self.cost[-1]:  # a repeated cost is ignored (HiGHS warns)
                    self.cost[-1] = value
                continue
            i = self.row_of.get(row)
            if i is None:
                raise _Unsure("unknown row in COLUMNS")
            if value and i not in self.column_rows:  # a repeated entry is ignored (HiGHS warns)
                self.column_rows.add(i)
                self.column_entries.append((i, value))

    def _rhs(self, tokens: list[str]) -> None:
        if len(tokens) not in (3, 5) or tokens[0] in self.row_of or tokens[0] == self.objective:
            raise _Unsure("RHS line")  # a row name first: HiGHS reads it as SIF (no set name)
        for k in range(1, len(tokens), 2):
            row, value = tokens[k], _number(tokens[k + 1])
            if row in self.has_rhs:
                continue  # a repeated RHS is ignored (HiGHS warns)
            self.has_rhs.add(row)
            if row == self.objective:
                self.offset = -value
                continue
            i = self.row_of.get(row)
            if i is None:
                raise _Unsure("unknown row in RHS")
            if self.row_type[i] in ("E", "L"):
                self.row_upper[i] = value
            if self.row_type[i] in ("E", "G"):
                self.row_lower[i] = value

    def _range(self, tokens: list[str]) -> None:
        if len(tokens) not in (3, 5):
            raise _Unsure("RANGES line")
        for k in range(1, len(tokens), 2):
            i, value = self.row_of.get(tokens[k]), _number(tokens[k + 1])
            if i is None:
                raise _Unsure("RANGES row")
            if i in self.has_range:
                continue  # a repeated range is ignored (HiGHS warns)
            self.has_range.add(i)
            kind = self.row_type[i]
            if kind == "L" or (kind == "E" and value < 0):
                self.row_lower[i] = self.row_upper[i] - abs(value)
            elif kind == "G" or (kind == "E" and value > 0):
                self.row_upper[i] = self.row_lower[i] + abs(value)

    def _bound(self, tokens: list[str]) -> None:
        spec = _BOUNDS.get(tokens[0])
        if spec is None:
            raise _Unsure(f"bound type {tokens[0]}")
        sets_lower, sets_upper, integer, valued = spec
        if len(tokens) != (4 if valued else 3) or tokens[1] in self.col_of:
            raise _Unsure("BOUNDS line")  # a column name second: HiGHS reads it as SIF (no set name)
        j = self.col_of.get(tokens[2])
        if j is None:
            raise _Unsure("unknown column in BOUNDS")  # HiGHS would add a column
        if (sets_lower and j in self.has_lower) or (sets_upper and j in self.has_upper):
            return  # the whole entry is ignored (HiGHS warns): gurobipy's "FX 0" then "BV" leaves a continuous [0, 0]
        if sets_lower:
            self.has_lower.add(j)
        if sets_upper:
            self.has_upper.add(j)
        if not valued:
            if tokens[0] == "BV":
                self.integer[j], self.binary[j], self.upper[j] = True, True, 1.0
            else:
                self.binary[j] = False
                if sets_lower:
                    self.lower[j] = -INF
                if sets_upper:
                    self.upper[j] = INF
            return
        value = _number(tokens[3])
        if integer:
            self.integer[j] = True
        if sets_lower:
            self.lower[j] = value
        if sets_upper:
            self.upper[j] = value
        self.binary[j] = False

    def _model(self) -> MpsModel:
        for j, binary in enumerate(self.binary):
            if binary:
                self.lower[j], self.upper[j] = 0.0, 1.0
        for column in self.entries:
            for _, a in column:
                if not _SMALL_ENTRY < abs(a) < _LARGE:
                    raise _Unsure("coefficient HiGHS drops or rejects")
        if any(abs(c) >= _LARGE for c in self.cost) or abs(self.offset) >= _LARGE:
            raise _Unsure("huge cost")
        return MpsModel(self.col_names, _lower(self.lower), _upper(self.upper), self.cost, self.integer,
                        list(self.row_of), _lower(self.row_lower), _upper(self.row_upper), self.entries,
                        self.offset, self.maximize)


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
