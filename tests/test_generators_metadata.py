"""Issue 20's problem metadata end to end: techniques, application domain and distractors travel from the generator
through the store (SQL can slice by technique; parts without the columns read as empty), measured difficulty is
stored next to the knob, and the numeric-coverage contract tells a modelled distractor from data."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts import Outcome, get_contract
from contracts.testing import make_sample
from flywheel.generators._difficulty import measured_difficulty, measured_level
from flywheel.generators._phrasing import Question, distractor_facts, drop_integrality, reorder, text_rng
from flywheel.generators.base import family_names, generate_problem, get_family
from flywheel.generators.testing import problem_with_truth
from flywheel.store import Store
from flywheel.store.rows import problem_from_row, problem_row
from solvers.ground_truth import solve_ground_truth
from solvers.render import render


def _solved(family: str, seed: int, difficulty: int = 2):  # noqa: ANN202
    p = generate_problem(family, seed, difficulty)
    return p.model_copy(update={"ground_truth": solve_ground_truth(p.ir)})


def test_store_round_trip_and_sql_slices_by_technique(tmp_path: Path) -> None:
    problems = [_solved(f, 1) for f in family_names()]
    with Store.open(tmp_path / "s") as st:
        st.write("problems", 0, [problem_row(p) for p in problems])
        # An older part: a row without the new columns (as written before they existed) reads techniques as [].
        st.write("problems", 0, [{"problem_id": "old", "family": "diet", "seed": 0, "difficulty": 1}])
        rows = st.query("SELECT * FROM problems WHERE problem_id <> 'old'").to_pylist()
        assert sorted(problem_from_row(r).canonical_json() for r in rows) == sorted(p.canonical_json()
                                                                                    for p in problems)
        fixed = st.query("SELECT family FROM problems WHERE list_contains(techniques, 'fixed_charge') "
                         "ORDER BY family").column(0).to_pylist()
        assert fixed == sorted(f for f in family_names() if "fixed_charge" in get_family(f).techniques)
        assert fixed  # at least one family uses it, or the slice tests nothing
        old = st.query("SELECT techniques, n_techniques, measured_level FROM problems "
                       "WHERE problem_id = 'old'").to_pylist()
        assert old == [{"techniques": [], "n_techniques": None, "measured_level": None}]
        sectors = st.query("SELECT DISTINCT application_domain FROM problems WHERE problem_id <> 'old'").column(0)
        assert set(sectors.to_pylist()) == {p.application_domain for p in problems}
        measured = st.query("SELECT n_nonzeros, n_techniques, measured_difficulty, measured_level, gt_solve_ms "
                            "FROM problems WHERE problem_id <> 'old'").to_pylist()
        assert all(m["n_nonzeros"] > 0 and m["measured_difficulty"] > 0 and 1 <= m["measured_level"] <= 5
                   for m in measured)


def test_measured_difficulty_grows_with_size_techniques_and_time() -> None:
    small = {"n_vars": 3, "n_constraints": 2, "n_nonzeros": 6}
    big = {"n_vars": 300, "n_constraints": 200, "n_nonzeros": 2000, "n_binary": 40}
    assert measured_difficulty(small, 0, 0.5) < measured_difficulty(big, 0, 0.5)
    assert measured_difficulty(big, 0, 0.5) < measured_difficulty(big, 3, 0.5) < measured_difficulty(big, 3, 900)
    assert measured_level(measured_difficulty(small, 0, 0.1)) == 1
    assert measured_level(measured_difficulty(big, 4, 900)) == 5
    # Across real problems: the knob and the measure agree on the extremes of one family.
    easy, hard = _solved("facility_location", 3, 1), _solved("facility_location", 3, 5)
    assert problem_row(easy)["measured_difficulty"] < problem_row(hard)["measured_difficulty"]


def test_phrasing_helpers_are_deterministic_and_careful() -> None:
    rng_a, rng_b = text_rng("f", {"x": 1}, 3), text_rng("f", {"x": 1}, 3)
    assert distractor_facts("retail", rng_a, set()) == distractor_facts("retail", rng_b, set())
    # Distractors never take a value the model uses, however crowded the range is.
    avoid = {float(x) for x in range(3, 30)}
    _, values = distractor_facts("retail", text_rng(1), avoid, k=4)
    assert values and not set(values) & avoid
    text, dropped = drop_integrality("Ship 4 crates. Crate counts must be whole numbers. Fractions of a pallet "
                                     "are fine. Minimise cost.")
    assert dropped and "whole" not in text and "Fractions" in text
    data = {"items": ["a", "b", "c"], "other": ["x", "y"]}
    moved = reorder(data, ["items"], text_rng(2))
    assert moved["items"] != data["items"] and sorted(moved["items"]) == data["items"]
    assert moved["other"] == data["other"]
    q = Question("text 5", [5])
    assert q == "text 5" and q.distractors == (5.0,)


def _distractor_problem():  # noqa: ANN202
    """A problem whose question carries distractors (one of the generic distractor phrasings), with its truth."""
    for seed in range(200):
        p = problem_with_truth("production_planning", seed)
        if p.distractors:
            return p
    raise AssertionError("no seed gave a distractor phrasing")


def test_numeric_coverage_flags_a_modelled_distractor() -> None:
    problem = _distractor_problem()
    code = render(problem.ir, "gurobipy")
    contract = get_contract("numeric_coverage")
    ok = contract(make_sample(problem, code=code))
    assert ok.outcome == Outcome.PASS, ok.message
    distractor = problem.distractors[0]
    bad = contract(make_sample(problem, code=code + f"\nextra_budget = {distractor:g}\n"))
    assert bad.outcome == Outcome.FAIL and bad.evidence["distractors_used"] == [distractor]
    # Unit conversions a question leaves to the modeller are not invented numbers.
    converted = contract(make_sample(problem, code=code + "\nminutes_per_hour = 60\n"))
    assert converted.outcome == Outcome.PASS, converted.message


@pytest.mark.parametrize("family", family_names())
def test_reference_program_ignores_the_distractors(family: str) -> None:
    """The reference program of a distractor phrasing uses none of its distractor numbers as literals."""
    from contracts.codefacts import code_literals, contains_number

    fam = get_family(family)
    for seed in range(40):
        p = generate_problem(family, seed, 1)
        if p.distractors:
            break
    else:
        pytest.fail(f"no distractor phrasing among 40 seeds of {fam.name}")
    model_numbers = {x for q in p.ir.params for x in q.numbers()}
    literals = set(code_literals(render(p.ir, "pyomo")))
    assert not [x for x in p.distractors if contains_number(literals, x) and not contains_number(model_numbers, x)]


def test_curriculum_weights_by_measured_level(tmp_path: Path) -> None:
    from flywheel.curation.mix import load_mix, weight_of

    path = tmp_path / "mix.toml"
    path.write_text('[weights.measured_level]\n"5" = 3.0\n"1" = 0.0\n[weights.difficulty]\n"5" = 0.5\n')
    w = load_mix(path).weights
    assert weight_of({"measured_level": 5, "difficulty": 5}, w) == 1.5
    assert weight_of({"measured_level": 1, "difficulty": 5}, w) == 0.0
    assert weight_of({"measured_level": 3, "difficulty": 2}, w) == 1.0
