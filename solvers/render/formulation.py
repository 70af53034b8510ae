"""Placeholder: replaced by the renderer work (five-element formulation text from the IR)."""

from __future__ import annotations

from solvers.ir import Model


def formulation_text(model: Model) -> str:
    return f"Model {model.name}"
