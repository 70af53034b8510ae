"""Reference programs stay programs a small model can write: loops over the data, not rows written out.

The renderer writes a constraint group row by row, with its numbers, wherever no loop template reproduces it (see
``solvers.render.plan``). Before 2026-12-05 most of issue 20's families built models the template search could not
read, and their programs ran to 5-22x the length of the question (network_capacity_design: 2,594-5,391 SmolLM2
tokens). These checks keep every family near an expert's program (``bench/program_tokens.py --structure`` measures
it in tokens): a bounded length against the question, and rows written out only where a family's reason is recorded.
"""

from __future__ import annotations

import pytest

from flywheel.generators.base import family_names, generate_problem
from solvers.render import render
from solvers.render.plan import plan

# Families allowed to write some rows out, with the most they did (share of rows, seeds below, d1-3) and why. A
# family not listed must write none out. Generator v2 draws sizes around each difficulty's, so a difficulty-1
# instance can be smaller than v1's and its single named rows a larger share.
WRITTEN_OUT = {
    "ambulance_location": (1.0, "coverage is time[d, s] <= standard: a sum filtered by a comparison"),
    "shift_staffing": (0.95, "cyclic shift windows: an index at an offset from the row's"),
    "team_selection": (0.9, "single named rules (if-then, not both, at least one) and membership lists"),
    "capital_budgeting": (0.65, "single named rules: requires, exclusive, mandatory"),
    "goal_programming": (0.55, "one goal row per named goal"),
    "cash_flow_matching": (0.5, "the first period's balance and single named rows"),
    "index_tracking": (0.45, "per-asset caps stated one by one"),
    "loan_portfolio_goals": (0.4, "one goal row per named goal"),
    "machine_setup_mix": (0.4, "single named rows (contract, capacity); v2's smallest instances: 0.385"),
    "workforce_planning": (0.35, "the first period's balance"),
    "constrained_least_squares": (0.3, "monotone rows between named coefficients"),
    "lad_forecast": (0.35, "sign and size rows of single observations; v2's fewest observations: 0.316"),
    "overtime_product_mix": (0.25, "single named rows (contract, labour)"),
    "production_smoothing": (0.2, "the first period's balance and change"),
    "inventory_backlog": (0.15, "backlog[last] <= 0: one row"),
    "course_goals": (0.1, "one goal row"),
}
SEEDS = (7, 90_001, 90_002)  # 90,001+ is the demo's held-out stream
MAX_CHARS_PER_QUESTION_CHAR = 8.0  # today's longest is ~6.6 (bin_packing: short questions); the old renderings ran to ~20


@pytest.mark.parametrize("family", family_names())
def test_programs_are_loops_over_the_data(family: str) -> None:
    allowed, reason = WRITTEN_OUT.get(family, (0.0, ""))
    for seed in SEEDS:
        for difficulty in (1, 2, 3):
            problem = generate_problem(family, seed, difficulty)
            p = plan(problem.ir)
            rows = sum(cg.n_rows for cg in p.con_groups)
            written = [cg.name for cg in p.con_groups if not cg.templated]
            share = sum(cg.n_rows for cg in p.con_groups if not cg.templated) / max(rows, 1)
            where = f"{family} seed {seed} d{difficulty}"
            assert share <= allowed, f"{where}: groups {written} written out row by row ({share:.0%}); {reason}"
            assert p.objective.terms is not None, f"{where}: objective written out term by term"
            code = render(problem.ir, "gurobipy", problem.question)
            ratio = len(code) / len(problem.question)
            assert ratio <= MAX_CHARS_PER_QUESTION_CHAR, f"{where}: program {ratio:.1f}x the question's length"


def test_the_allowances_name_real_families() -> None:
    assert set(WRITTEN_OUT) <= set(family_names())
