"""The default suites: one for generator rounds (reference programs), one for policy rounds (model responses)."""

from __future__ import annotations

from dataclasses import replace

from contracts.suites import Suite, register_suite


@register_suite("generator")
def generator_suite() -> Suite:
    """Reference programs rendered from the IR must reproduce the verified answer with the very same model."""
    return Suite.of(
        "generator",
        "has_code", "sanity", "executes", "solve_called", "no_hardcoded_answer", "status_matches_ground_truth",
        ("objective_matches", {"rule": "strict"}), "feasible_on_reference", "structurally_equivalent",
        "numeric_coverage", "cross_solver",
        description="generator rounds: reference programs must reproduce the ground truth exactly",
    )


@register_suite("policy")
def policy_suite() -> Suite:
    """Model responses: answer-blind repairs first, then the same answer checks, structure and reasoning as warnings."""
    return Suite.of(
        "policy",
        "strip_fences", "fix_import_aliases", "add_solve_call", "inject_solver_params",
        "has_code", "sanity", "response_format", "uses_requested_api", "executes", "solve_called",
        "no_hardcoded_answer", "status_matches_ground_truth", ("objective_matches", {"rule": "strict"}),
        "feasible_on_reference", "structurally_equivalent", "numeric_coverage", "cot_consistent",
        description="policy rounds: repairs, then answer, structure and reasoning checks",
    )


@register_suite("default")
def default_suite() -> Suite:
    """What `flywheel run-round` runs when no suite is named: the generator suite (reference programs must not be
    touched by repairs, so the policy suite is opt-in with --suite policy)."""
    return replace(generator_suite(), name="default")
