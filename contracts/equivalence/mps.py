"""MPS text into the equivalence layers' standard form, through the project's one MPS reader
(``solvers.sandbox.mps.read``: HiGHS's semantics, by a fast pure-Python path or HiGHS itself; quadratic objectives
included). What this module adds: refusing the sections whose meaning the standard form cannot hold (quadratic
constraints, indicators, general constraints, SOS, semi-continuous bounds), and the objective sense of the solve."""

from __future__ import annotations

from contracts.equivalence.stdform import StdModel
from solvers.errors import ModelError
from solvers.sandbox.mps import read as read_model

# Sections that change the feasible set in ways the standard form does not model: refusing beats comparing a wrong
# model (HiGHS's reader drops quadratic constraint rows, for one).
UNSUPPORTED = {"QCMATRIX", "INDICATORS", "GENCONS", "SOS", "PWLOBJ", "CSECTION", "USERCUTS", "LAZYCONS",
               "SEMICONT", "OBJSENSEMULTI", "SETS"}
# The sections whose meaning the standard form holds (anything else is refused, as above).
_SECTIONS = {"NAME", "OBJSENSE", "ROWS", "COLUMNS", "RHS", "RANGES", "BOUNDS", "QUADOBJ", "QMATRIX", "QSECTION",
             "ENDATA", "OBJNAME"}


class UnsupportedModelError(ModelError):
    """The MPS uses a feature (quadratic constraints, indicators, general constraints, SOS) the checker cannot read."""


def read_mps(text: str, sense: str | None = None) -> StdModel:
    """Parse MPS text. ``sense`` ("minimize"/"maximize"), when known from the solve call, overrides OBJSENSE.

    Integer columns of a MARKER block without bounds are binary, as HiGHS reads them."""
    section = ""
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("*"):
            continue
        head = raw.split()[0].upper()
        if not raw[0].isspace():
            section = head
            if head in UNSUPPORTED or head not in _SECTIONS:
                raise UnsupportedModelError(f"MPS section {head} is not supported", culprit="captured model")
        elif section == "BOUNDS" and head in ("SC", "SI"):
            raise UnsupportedModelError("semi-continuous bounds are not supported", culprit="captured model")
    model = read_model(text)
    if model is None:
        raise ModelError("HiGHS cannot read this MPS text", culprit="captured model")
    rows: list[dict[int, float]] = [{} for _ in model.row_names]
    for j, column in enumerate(model.columns):
        for i, a in column:
            rows[i][j] = rows[i].get(j, 0.0) + a
    obj = {j: c for j, c in enumerate(model.col_cost) if c != 0.0}
    maximize = model.maximize if sense is None else sense.lower().startswith("max")
    return StdModel(list(model.col_names), list(model.integer), list(model.col_lower), list(model.col_upper), rows,
                    list(model.row_lower), list(model.row_upper), obj, maximize, model.offset, dict(model.quad),
                    list(model.row_names))
