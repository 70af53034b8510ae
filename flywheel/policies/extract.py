"""Code extraction for policy responses: the contracts engineer's ``contracts.extract.extract_code`` is the one
rule for the whole project (the contracts judge the same code the sandbox runs), so this only re-exports it."""

from __future__ import annotations

from contracts.extract import extract_code

__all__ = ["extract_code"]
