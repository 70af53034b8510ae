"""A small MPS reader (free and fixed format, as gurobipy, HiGHS, COPT, CPLEX and our IR write it).

Why our own: captured models arrive as text, and reading them needs no temp files, no solver licence and keeps the
variable names exactly as the program spelled them (which the name-mapping step relies on).
"""

from __future__ import annotations

from contracts.equivalence.stdform import INF, StdModel
from solvers.errors import ModelError

_SECTIONS = {"NAME", "OBJSENSE", "ROWS", "COLUMNS", "RHS", "RANGES", "BOUNDS", "QUADOBJ", "QMATRIX", "QSECTION",
             "ENDATA", "OBJNAME"}
# Sections that change the feasible set in ways this reader does not model: refusing beats comparing a wrong model.
UNSUPPORTED = {"QCMATRIX", "INDICATORS", "GENCONS", "SOS", "PWLOBJ", "CSECTION", "USERCUTS", "LAZYCONS",
               "SEMICONT", "OBJSENSEMULTI"}


class UnsupportedModelError(ModelError):
    """The MPS uses a feature (quadratic constraints, indicators, general constraints, SOS) the checker cannot read."""


def read_mps(text: str, sense: str | None = None) -> StdModel:
    """Parse MPS text. ``sense`` ("minimize"/"maximize"), when known from the solve call, overrides OBJSENSE.

    Integer columns (MARKER INTORG) without bounds get [0, inf) as gurobipy and HiGHS read them.
    """
    names: list[str] = []
    col_index: dict[str, int] = {}
    integer: list[bool] = []
    lb: list[float] = []
    ub: list[float] = []
    row_index: dict[str, int] = {}
    row_type: list[str] = []
    row_names: list[str] = []
    rows: list[dict[int, float]] = []
    rhs: dict[int, float] = {}
    ranges: dict[int, float] = {}
    obj: dict[int, float] = {}
    quad: dict[tuple[int, int], float] = {}
    obj_row: str | None = None
    constant = 0.0
    maximize = False
    section = ""
    in_int = False
    explicit_bounds: set[int] = set()

    def col(name: str) -> int:
        if name not in col_index:
            col_index[name] = len(names)
            names.append(name)
            integer.append(in_int)
            lb.append(0.0)
            ub.append(INF)
        return col_index[name]

    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("*"):
            continue
        tokens = raw.split()
        head = tokens[0].upper()
        if not raw[0].isspace():
            if head in UNSUPPORTED or head not in _SECTIONS:
                raise UnsupportedModelError(f"MPS section {head} is not supported", culprit="captured model")
            section = head
            if head == "OBJSENSE" and len(tokens) > 1:
                maximize = tokens[1].upper().startswith("MAX")
            continue
        if section == "OBJSENSE":
            maximize = head.startswith("MAX")
        elif section == "ROWS":
            kind, name = tokens[0].upper(), tokens[1]
            if kind == "N":
                obj_row = obj_row or name
                continue
            row_index[name] = len(rows)
            rows.append({})
            row_type.append(kind)
            row_names.append(name)
        elif section == "COLUMNS":
            if len(tokens) >= 3 and tokens[1].strip("'\"").upper() == "MARKER":
                in_int = tokens[2].strip("'\"").upper() == "INTORG"
                continue
            j = col(tokens[0])
            for k in range(1, len(tokens) - 1, 2):
                rname, val = tokens[k], float(tokens[k + 1])
                if rname == obj_row:
                    obj[j] = obj.get(j, 0.0) + val
                elif rname in row_index:
                    r = row_index[rname]
                    rows[r][j] = rows[r].get(j, 0.0) + val
        elif section in ("RHS", "RANGES"):
            pairs = tokens[1:] if len(tokens) % 2 == 1 else tokens
            for k in range(0, len(pairs) - 1, 2):
                rname, val = pairs[k], float(pairs[k + 1])
                if rname == obj_row and section == "RHS":
                    constant = -val  # MPS: the objective row's RHS is minus the objective constant
                elif rname in row_index:
                    (rhs if section == "RHS" else ranges)[row_index[rname]] = val
        elif section == "BOUNDS":
            if head == "SC":
                raise UnsupportedModelError("semi-continuous bounds are not supported", culprit="captured model")
            _bound(tokens, col, integer, lb, ub, explicit_bounds)
        elif section in ("QUADOBJ", "QMATRIX", "QSECTION"):
            i, j, val = col(tokens[0]), col(tokens[1]), float(tokens[2])
            key = (min(i, j), max(i, j))
            # QUADOBJ lists each off-diagonal once (coefficient of x_i x_j is Q_ij); QMATRIX lists both triangles.
            # Both describe 0.5 x'Qx, so a diagonal entry contributes 0.5 Q_ii x_i^2.
            weight = 0.5 if (i == j or section != "QUADOBJ") else 1.0
            quad[key] = quad.get(key, 0.0) + weight * val
        elif section == "ENDATA":
            break
    lo, hi = [], []
    for r, kind in enumerate(row_type):
        b = rhs.get(r, 0.0)
        rng = ranges.get(r)
        if kind == "L":
            lo.append(-INF if rng is None else b - abs(rng))
            hi.append(b)
        elif kind == "G":
            lo.append(b)
            hi.append(INF if rng is None else b + abs(rng))
        elif kind == "E":
            lo.append(b if rng is None or rng >= 0 else b + rng)
            hi.append(b if rng is None or rng <= 0 else b + rng)
        else:
            raise ModelError(f"unknown row type {kind!r}", culprit=f"MPS row {row_names[r]}")
    if sense is not None:
        maximize = sense.lower().startswith("max")
    return StdModel(names, integer, lb, ub, rows, lo, hi, obj, maximize, constant, quad, row_names)


def _bound(tokens: list[str], col, integer: list[bool], lb: list[float], ub: list[float],
           explicit: set[int]) -> None:
    kind = tokens[0].upper()
    valued = kind in {"UP", "LO", "FX", "LI", "UI", "SC"}
    # With a bound-set name: 4 tokens (valued) or 3; without: 3 or 2.
    if valued:
        name, val = (tokens[2], float(tokens[3])) if len(tokens) >= 4 else (tokens[1], float(tokens[2]))
    else:
        name, val = (tokens[2] if len(tokens) >= 3 else tokens[1]), 0.0
    j = col(name)
    explicit.add(j)
    if kind in ("UP", "UI", "SC"):
        ub[j] = val
        if kind == "UI":
            integer[j] = True
    elif kind in ("LO", "LI"):
        lb[j] = val
        if kind == "LI":
            integer[j] = True
    elif kind == "FX":
        lb[j] = ub[j] = val
    elif kind == "FR":
        lb[j], ub[j] = -INF, INF
    elif kind == "MI":
        lb[j] = -INF
    elif kind == "PL":
        ub[j] = INF
    elif kind == "BV":
        integer[j] = True
        lb[j], ub[j] = 0.0, 1.0
