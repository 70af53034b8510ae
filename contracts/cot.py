"""Chain of thought from the IR, and the chat-format training response (reasoning + code).

Generator samples get a deterministic chain of thought written from the model itself (understand -> sets ->
parameters -> variables -> objective -> constraints -> code plan), in one of several styles, and with phrasings
drawn from a generator seeded by the problem id, so SFT data is not one template and the same problem always gets
the same text. Everything it states (sense, counts, integrality) is true of the model by construction, which
``cot_consistent`` then verifies against what the solver was actually given.

Policy samples keep their own reasoning when ``cot_consistent`` accepts it; otherwise a rewriter (the configured
LLM, passed in as a callable) may rewrite it, and the rewrite is re-verified before it is used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.ir import ConSense, Model, ObjSense, VarType, linear_expr_str, number_text
from solvers.records import Problem

STYLES = ("stepwise", "narrative", "compact", "socratic")
_SENSE_WORD = {ConSense.LE: "at most", ConSense.GE: "at least", ConSense.EQ: "exactly"}
_CLASS_NAME = {"LP": "a linear program", "IP": "an integer program", "MILP": "a mixed-integer linear program",
               "QP": "a convex quadratic program", "MIQP": "a mixed-integer quadratic program"}
_API_CALLS = {
    "gurobipy": ("gp.Model", "addVars", "addConstrs", "setObjective", "optimize()"),
    "pyomo": ("pyo.ConcreteModel", "pyo.Var", "pyo.Constraint", "pyo.Objective", "SolverFactory(...).solve"),
    "ortools": ("pywraplp.Solver", "NumVar/IntVar", "solver.Add", "Maximize/Minimize", "Solve()"),
    "coptpy": ("env.createModel", "addVars", "addConstrs", "setObjective", "solve()"),
    "docplex": ("Model", "continuous/integer/binary_var_dict", "add_constraint", "maximize/minimize", "solve()"),
}


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:12], 16))


def pick_style(key: str) -> str:
    """The style a problem gets when none is asked for: a stable function of its id."""
    return STYLES[int(hashlib.sha256(("style:" + key).encode()).hexdigest()[:8], 16) % len(STYLES)]


def _facts(m: Model, api: str) -> dict[str, Any]:
    """What every style says, as plain sentences per step; styles only arrange and phrase them."""
    maximize = m.objective.sense == ObjSense.MAXIMIZE
    metrics = m.metrics()
    sets = [f"{s.name} = {{{', '.join(s.elements[:8])}{', ...' if len(s.elements) > 8 else ''}}}"
            + (f" ({s.description})" if s.description else "") for s in m.sets]
    params = []
    for p in m.params:
        vals = p.numbers()
        shown = ", ".join(number_text(v) for v in vals[:4]) + (", ..." if len(vals) > 4 else "")
        idx = f"[{', '.join(p.index)}]" if p.index else ""
        what = p.description or p.name
        params.append(f"{p.name}{idx}: {what}" + (f" ({p.unit})" if p.unit else "") + f", values {shown}"
                      + (" - derived by the modeller, not stated in the question" if p.derived else ""))
    variables = []
    for g in m.var_groups or ():
        members = [v for v in m.variables if v.group == g.name]
        if not members:
            continue
        v0 = members[0]
        kind = {VarType.CONTINUOUS: "continuous", VarType.INTEGER: "integer", VarType.BINARY: "binary"}[g.vtype]
        lo = "-inf" if v0.lb is None else number_text(v0.lb)
        hi = "+inf" if v0.ub is None else number_text(v0.ub)
        idx = f"[{', '.join(g.index)}]" if g.index else ""
        bounds = "" if g.vtype == VarType.BINARY else f" in [{lo}, {hi}]"
        variables.append(f"{g.name}{idx}: {g.description or g.name}, {kind}{bounds}, {len(members)} of them")
    obj_terms = m.objective.terms
    sample_expr = linear_expr_str(obj_terms[:4]) + (" + ..." if len(obj_terms) > 4 else "")
    constraints = []
    for cg in m.con_groups:
        rows = [c for c in m.constraints if c.group == cg.name]
        if not rows:
            continue
        r0 = rows[0]
        example = f"{_row_text(r0.terms)} {r0.sense.value} {number_text(r0.rhs)}"
        idx = f" (one per {' x '.join(cg.index)})" if cg.index else ""
        constraints.append(f"{cg.name}{idx}: {cg.description or cg.name} ({len(rows)} rows; e.g. {example}, "
                           f"{_SENSE_WORD[r0.sense]} {number_text(r0.rhs)})")
    integer = metrics["n_integer"] + metrics["n_binary"]
    return {
        "sense": "maximize" if maximize else "minimize",
        "goal": m.objective.description or ("the objective"),
        "class": _CLASS_NAME.get(m.problem_class, m.problem_class),
        "n_vars": metrics["n_vars"], "n_cons": metrics["n_constraints"], "integer": integer,
        "sets": sets, "params": params, "variables": variables, "objective": sample_expr,
        "n_obj_terms": len(obj_terms), "quadratic": len(m.objective.quadratic), "constraints": constraints,
        "api": api, "calls": _API_CALLS.get(api),
    }


def _row_text(terms: tuple[tuple[str, float], ...]) -> str:
    """A row written out; a long one keeps its first three and last two terms (the last is often the big-M or
    linking term that explains the row)."""
    if len(terms) <= 6:
        return linear_expr_str(terms)
    tail = linear_expr_str((("_", 1.0), *terms[-2:]))[1:]  # render the tail with its signs, drop the dummy
    return f"{linear_expr_str(terms[:3])} + ...{tail}"


def _integrality(f: dict[str, Any]) -> str:
    if f["integer"] == 0:
        return "All decision variables are continuous, so fractional values are allowed."
    if f["integer"] == f["n_vars"]:
        return f"All {f['n_vars']} decision variables take integer values."
    return f"{f['integer']} of the {f['n_vars']} decision variables take integer values; the rest are continuous."


def _plan(f: dict[str, Any], rng: np.random.Generator) -> list[str]:
    if f["calls"] is None:
        return ["Build the model, solve it, and report the status and the optimal objective."]
    model, add_vars, add_cons, objective, solve = f["calls"]
    steps = [f"create the model with {model}", f"declare the variables with {add_vars}",
             f"add each constraint family with {add_cons}", f"set the objective with {objective} ({f['sense']})",
             f"call {solve} and print the status and the objective value"]
    lead = ["In code", "The program will", "Implementation plan", "With " + f["api"]][int(rng.integers(4))]
    return [f"{lead}: " + "; ".join(steps) + "."]


def _understand(f: dict[str, Any], rng: np.random.Generator) -> str:
    opener = ["We need to", "The task is to", "The goal is to", "We want to"][int(rng.integers(4))]
    return (f"{opener} {f['sense']} {f['goal']}. This is {f['class']} with {f['n_vars']} variables and "
            f"{f['n_cons']} constraints. {_integrality(f)}")


def _objective(f: dict[str, Any]) -> str:
    quad = f" plus {f['quadratic']} quadratic terms" if f["quadratic"] else ""
    return f"{f['sense'].capitalize()} {f['goal']}: {f['objective']} ({f['n_obj_terms']} linear terms{quad})."


def _render_stepwise(f: dict[str, Any], rng: np.random.Generator) -> str:
    parts = ["### 1. Understand the problem", _understand(f, rng), "### 2. Sets", *("- " + s for s in f["sets"]),
             "### 3. Parameters", *("- " + p for p in f["params"]), "### 4. Decision variables",
             *("- " + v for v in f["variables"]), "### 5. Objective", _objective(f), "### 6. Constraints",
             *("- " + c for c in f["constraints"]), "### 7. Code plan", *_plan(f, rng)]
    return "\n".join(p for p in parts if p)


def _render_narrative(f: dict[str, Any], rng: np.random.Generator) -> str:
    paras = [_understand(f, rng)]
    if f["sets"]:
        paras.append("The model is indexed by " + "; ".join(f["sets"]) + ".")
    if f["params"]:
        paras.append("The data are " + "; ".join(f["params"]) + ".")
    paras.append("As decisions, we use " + "; ".join(f["variables"]) + ".")
    paras.append(_objective(f))
    paras.append("The constraints are: " + "; ".join(f["constraints"]) + ".")
    paras += _plan(f, rng)
    return "\n\n".join(paras)


def _render_compact(f: dict[str, Any], rng: np.random.Generator) -> str:
    lines = [f"**Goal:** {f['sense']} {f['goal']} ({f['class']}, {f['n_vars']} variables, {f['n_cons']} "
             f"constraints). {_integrality(f)}"]
    lines += ["**Sets:** " + "; ".join(f["sets"])] if f["sets"] else []
    lines += ["**Parameters:**", *("* " + p for p in f["params"])]
    lines += ["**Variables:**", *("* " + v for v in f["variables"])]
    lines += ["**Objective:** " + _objective(f)]
    lines += ["**Constraints:**", *("* " + c for c in f["constraints"])]
    lines += ["**Plan:** " + _plan(f, rng)[0]]
    return "\n".join(lines)


def _render_socratic(f: dict[str, Any], rng: np.random.Generator) -> str:
    qa = [("What are we asked to do?", _understand(f, rng)),
          ("Over which sets does the model range?", "; ".join(f["sets"]) or "A single, unindexed decision."),
          ("Which data does it need?", "; ".join(f["params"]) or "Only the numbers in the question."),
          ("What do we decide?", "; ".join(f["variables"])),
          ("What do we optimise?", _objective(f)),
          ("What limits the decisions?", "; ".join(f["constraints"]) or "Only the variable bounds."),
          ("How do we code it?", _plan(f, rng)[0])]
    return "\n\n".join(f"**Q: {q}**\nA: {a}" for q, a in qa)


RENDERERS: dict[str, Callable[[dict[str, Any], np.random.Generator], str]] = {
    "stepwise": _render_stepwise, "narrative": _render_narrative, "compact": _render_compact,
    "socratic": _render_socratic,
}


def chain_of_thought(problem: Problem, api: str = "gurobipy", style: str | None = None) -> str:
    """Deterministic reasoning for ``problem`` (its IR) in ``style`` (default: chosen by the problem id)."""
    from solvers.errors import ModelError, unknown_name

    if problem.ir is None:
        raise ModelError("a chain of thought needs the problem's IR", culprit=f"problem {problem.problem_id}")
    style = style or pick_style(problem.problem_id)
    if style not in RENDERERS:
        raise unknown_name("CoT style", style, list(RENDERERS))
    return RENDERERS[style](_facts(problem.ir, api), _rng(f"{problem.problem_id}:{style}:{api}"))


def compose_response(reasoning: str, code: str) -> str:
    """The training response: the reasoning, then the program in one fenced python block."""
    return f"{reasoning.strip()}\n\n```python\n{code.strip()}\n```\n"


DEFAULT_SYSTEM = ("You are an operations research expert. Formulate the problem as an optimisation model, explain "
                  "your reasoning, then give one complete Python program that builds and solves it.")


def chat_messages(problem: Problem, response: str, api: str = "gurobipy",
                  system: str = DEFAULT_SYSTEM) -> list[dict[str, str]]:
    """SFT messages: system, the question (with the requested API), and the response."""
    user = f"{problem.question}\n\nWrite the program with {api}."
    return [{"role": "system", "content": system}, {"role": "user", "content": user},
            {"role": "assistant", "content": response}]


def generator_response(problem: Problem, code: str, api: str, style: str | None = None) -> str:
    """A generator sample's response: the IR's chain of thought plus the reference program."""
    return compose_response(chain_of_thought(problem, api, style), code)


def policy_response(sample: Any, rewriter: Callable[[str, Problem], str] | None = None) -> tuple[str, str]:
    """The response to train on for a policy sample, and where its reasoning came from.

    ``own``: the policy's reasoning agrees with the captured model (cot_consistent passes or has nothing to
    check). ``rewritten``: the rewriter's version passed the same check. ``generated``: neither did, so the IR's
    chain of thought replaces it. The code is always the sample's own (executed) program.
    """
    from contracts.api import Outcome, get_contract
    from contracts.builtin.structure import reasoning_text

    check = get_contract("cot_consistent")
    own = check(sample)
    if own.outcome in (Outcome.PASS, Outcome.SKIP) and reasoning_text(sample.attempt.response).strip():
        return compose_response(reasoning_text(sample.attempt.response), sample.code), "own"
    if rewriter is not None:
        text = rewriter(reasoning_text(sample.attempt.response), sample.problem)
        candidate = compose_response(text, sample.code)
        attempt = sample.attempt.model_copy(update={"response": candidate})
        if check(sample.model_copy(update={"attempt": attempt})).outcome == Outcome.PASS:
            return candidate, "rewritten"
    return generator_response(sample.problem, sample.code, sample.attempt.api or "gurobipy"), "generated"
