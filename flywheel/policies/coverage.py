"""Numeric coverage of an LLM-written story: every coefficient of the model is stated, and nothing is invented.

Number extraction reuses the contracts engineer's ``contracts.codefacts`` (the same rules the ``numeric_coverage``
contract applies to questions): that contract judges a program against a question, this judges a story against
the IR it must tell, so a story that passes here is one the contract will also find complete.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from contracts.codefacts import TRIVIAL, contains_number, question_numbers
from solvers.ir import Model


@dataclass(frozen=True)
class Coverage:
    ok: bool
    coverage: float  # share of the model's data numbers stated in the story
    missing: list[float] = field(default_factory=list)  # model numbers the story never states
    invented: list[float] = field(default_factory=list)  # story numbers that are not model data

    @property
    def problems(self) -> str:
        out = []
        if self.missing:
            out.append("the story must state these numbers exactly: " + ", ".join(f"{x:g}" for x in self.missing))
        if self.invented:
            out.append("the story must not contain these numbers: " + ", ".join(f"{x:g}" for x in self.invented))
        return "; ".join(out)


def data_numbers(ir: Model) -> set[float]:
    """Numbers a reader must be told: every non-derived parameter value (big-M and the like are the modeller's)."""
    return {float(x) for p in ir.params if not p.derived for x in p.numbers()}


def story_coverage(story: str, ir: Model, distractors: Iterable[float] = ()) -> Coverage:
    """Every data number appears in ``story``; every number in ``story`` is data, a derived parameter, a set size
    (``3 products``), a trivial constant (0, 1, 2, -1) or one of the problem's recorded ``distractors`` (numbers
    its generator stated on purpose that play no part in the model)."""
    stated = question_numbers(story)
    data = data_numbers(ir)
    allowed = data | {float(x) for p in ir.params if p.derived for x in p.numbers()} | {float(x) for x in distractors}
    allowed |= {float(len(s.elements)) for s in ir.sets} | TRIVIAL
    missing = sorted(x for x in data if not contains_number(stated, x))
    # A percentage is extracted both as written (15) and as a fraction (0.15); either form being data is enough.
    invented = sorted(x for x in stated if not contains_number(allowed, x)
                      and not contains_number(allowed, x * 100) and not contains_number(allowed, x / 100))
    coverage = 1 - len(missing) / len(data) if data else 1.0
    return Coverage(ok=not missing and not invented, coverage=coverage, missing=missing, invented=invented)


def same_numbers(original: str, rewritten: str) -> Coverage:
    """For problems without an IR (benchmark items): a paraphrase states exactly the numbers the original does."""
    before, after = question_numbers(original), question_numbers(rewritten)
    missing = sorted(x for x in before if not contains_number(after, x))
    invented = sorted(x for x in after if not contains_number(before, x) and x not in TRIVIAL)
    coverage = 1 - len(missing) / len(before) if before else 1.0
    return Coverage(ok=not missing and not invented, coverage=coverage, missing=missing, invented=invented)
