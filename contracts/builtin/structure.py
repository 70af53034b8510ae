"""Checks of the model itself: is it the reference model, does it use the question's numbers, does the reasoning
describe the model the program actually built."""

from __future__ import annotations

import re

from contracts.api import Verdict, contract
from contracts.codefacts import (
    TRIVIAL,
    UNIT_CONSTANTS,
    code_literals,
    contains_number,
    derivable,
    is_big_m,
    question_numbers,
    uses_callbacks,
)
from contracts.equivalence import compare_models, read_mps
from contracts.equivalence.mps import UnsupportedModelError
from contracts.extract import code_blocks
from contracts.sample import Sample


@contract(stage="after_execution", severity="reject", cost=2.0, layers=("exact", "wl", "semantic"))
def structurally_equivalent(sample: Sample, layers: tuple[str, ...] | list[str]) -> Verdict:
    """The model the program built (captured MPS) is the reference model up to permutation, scaling, slacks and
    valid reformulations: exact canonical hash, then WL hash, then fix-and-resolve."""
    ir = sample.problem.ir
    solve_ = sample.execution.final_solve if sample.execution else None
    if ir is None:
        return Verdict.skipped("no reference model")
    if solve_ is None or not solve_.model_mps:
        return Verdict.skipped("no captured model")
    if uses_callbacks(sample.code):
        return Verdict.skipped("the program adds constraints in solver callbacks: the captured model is partial")
    try:
        res = compare_models(ir, solve_.model_mps, layers=tuple(layers))
    except UnsupportedModelError as exc:
        return Verdict.skipped(f"captured model not checkable: {exc.message}")
    ev = {"layer": res.layer, "reason": res.reason, **res.evidence}
    if res.equivalent:
        return Verdict.passed(f"equivalent ({res.layer}): {res.reason}", **ev)
    return Verdict.failed(f"not equivalent ({res.layer}): {res.reason}", **ev)


@contract(stage="before_execution", severity="warn", cost=0.1, min_coverage=0.95, max_invented=0, max_distractors=0)
def numeric_coverage(sample: Sample, min_coverage: float, max_invented: int, max_distractors: int) -> Verdict:
    """Every number the reference model is built from appears in the question and in the program, and the program
    invents no numbers: each literal is stated, one arithmetic step from two stated numbers, a derived parameter
    of the reference, a unit conversion (60 minutes, 100 percent, a dozen, ...) or a trivial constant (0, 1, 2,
    -1, big-M, tolerances). Nor does it model the question's distractors: numbers the generator stated on purpose
    that play no part in the model (``Problem.distractors``)."""
    question = question_numbers(sample.problem.question)
    ir = sample.problem.ir
    data = sorted({x for p in (ir.params if ir else ()) if not p.derived for x in p.numbers()})
    literals = code_literals(sample.code)
    lit_pool = set(literals)
    missing_in_question = [x for x in data if not contains_number(question, x)]
    in_code = [x for x in data if contains_number(lit_pool, x)]
    coverage = len(in_code) / len(data) if data else 1.0
    derived_params = {x for p in (ir.params if ir else ()) if p.derived for x in p.numbers()}
    # A distractor that is also a model number (by coincidence) is data: only the others count against a program.
    distractors = {x for x in sample.problem.distractors if not contains_number(set(data) | derived_params, x)}
    used_distractors = sorted({x for x in literals if contains_number(distractors, x)})
    allowed = (question - distractors) | derived_params | UNIT_CONSTANTS
    unstated = sorted({x for x in literals if x not in TRIVIAL and not is_big_m(x) and not contains_number(allowed, x)
                       and not contains_number(distractors, x)})
    derived = [x for x in unstated if len(question) <= 300 and derivable(question, x)]
    invented = [x for x in unstated if x not in derived]
    ev = {"derived": derived[:20], "coverage": round(coverage, 4), "n_data_numbers": len(data), "not_in_code": [x for x in data if x not
          in in_code][:20], "invented": invented[:20], "not_in_question": missing_in_question[:20],
          "distractors_used": used_distractors[:20]}
    problems = []
    if len(used_distractors) > max_distractors:
        problems.append(f"{len(used_distractors)} distractor numbers modelled (e.g. {used_distractors[0]:g})")
    if missing_in_question:
        problems.append(f"{len(missing_in_question)} model numbers are not stated in the question")
    if coverage < min_coverage:
        problems.append(f"coverage {coverage:.0%} < {min_coverage:.0%}")
    if len(invented) > max_invented:
        problems.append(f"{len(invented)} invented numbers (e.g. {invented[0]:g})")
    if problems:
        return Verdict.failed("; ".join(problems), score=coverage, **ev)
    return Verdict(outcome="pass", score=coverage, message=f"coverage {coverage:.0%}, nothing invented", evidence=ev)


_MAX = re.compile(r"\bmaximi[sz](?:e|es|ing|ation)\b", re.IGNORECASE)
_MIN = re.compile(r"\bminimi[sz](?:e|es|ing|ation)\b", re.IGNORECASE)
_N_VARS = re.compile(r"\b(\d+)\s+(?:decision\s+)?variables\b", re.IGNORECASE)
_N_CONS = re.compile(r"\b(\d+)\s+(?:linear\s+)?constraints\b", re.IGNORECASE)
_INTEGER = re.compile(r"\b(?:integer|binary|whole[- ]number)\b", re.IGNORECASE)
_CONTINUOUS_ONLY = re.compile(r"\ball\b[^.]{0,40}\bcontinuous\b|\bfractional (?:units|quantities|values) "
                              r"(?:are )?allowed\b", re.IGNORECASE)


def reasoning_text(response: str) -> str:
    """The response without its code blocks."""
    text = response
    for _, body in code_blocks(response):
        text = text.replace(body, "")
    return re.sub(r"(`{3,}|~{3,})[^\n]*", "", text)


@contract(stage="after_execution", severity="warn", cost=0.05)
def cot_consistent(sample: Sample) -> Verdict:
    """What the reasoning states (optimisation sense, variable and constraint counts, integrality) agrees with
    the model the solver was given."""
    solve_ = sample.execution.final_solve if sample.execution else None
    reasoning = reasoning_text(sample.attempt.response)
    if not reasoning.strip():
        return Verdict.skipped("no reasoning")
    if solve_ is None:
        return Verdict.skipped("no captured model")
    sense = solve_.sense
    if sense is None and solve_.model_mps:
        try:
            sense = "maximize" if read_mps(solve_.model_mps).maximize else "minimize"
        except UnsupportedModelError:
            sense = None
    stated: dict[str, object] = {}
    conflicts: list[str] = []
    n_max, n_min = len(_MAX.findall(reasoning)), len(_MIN.findall(reasoning))
    if sense and (n_max or n_min) and not (n_max and n_min):
        stated["sense"] = "maximize" if n_max else "minimize"
        if stated["sense"] != sense:
            conflicts.append(f"reasoning says {stated['sense']}, the model does {sense}")
    for key, pattern, actual in (("n_vars", _N_VARS, solve_.n_vars), ("n_constraints", _N_CONS,
                                                                      solve_.n_constraints)):
        counts = {int(m.group(1)) for m in pattern.finditer(reasoning)}
        if counts and actual:
            stated[key] = sorted(counts)
            if actual not in counts:
                conflicts.append(f"reasoning states {sorted(counts)} {key[2:]}, the model has {actual}")
    n_int = solve_.n_int_vars + solve_.n_bin_vars
    if _CONTINUOUS_ONLY.search(reasoning) and not _INTEGER.search(reasoning):
        stated["integrality"] = "continuous"
        if n_int:
            conflicts.append(f"reasoning says continuous, the model has {n_int} integer variables")
    elif _INTEGER.search(reasoning) and solve_.n_vars and n_int == 0:
        stated["integrality"] = "integer"
        conflicts.append("reasoning speaks of integer variables, the model has none")
    if not stated:
        return Verdict.skipped("the reasoning states nothing checkable")
    if conflicts:
        return Verdict.failed("; ".join(conflicts), stated=stated, conflicts=conflicts)
    return Verdict.passed("reasoning agrees with the captured model", stated=stated)
