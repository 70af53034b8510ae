"""The one scoring core behind every reward adapter: a completion, its ground truth, the execution -> a reward.

    reward = match * w_match                       the strict objective rule (contracts.tolerance), or a solve that
                                                   concludes "infeasible" when the answer is "infeasible"
           + partial credit (when not a match, each optional, 0 by default):
               w_executes   the program ran to its end (status ok / no_solve_call / a solver verdict)
               w_solves     it called a solver
               w_feasible   its final solution is feasible on the reference model (names must match; needs
                            ``reference_mps``; the check is solvers.sandbox.verify.check_record)
               w_equivalent its captured model is structurally equivalent to the reference (contracts.equivalence)
           + w_format * (the completion holds a fenced python block)

An infrastructure failure (``sandbox_error``) is no evidence about the policy: the reward is ``None`` (TRL and
verl treat a missing reward as such), never 0.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from solvers.records import ExecStatus, Execution

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n.*?```", re.DOTALL | re.IGNORECASE)

# Statuses of a program that ran to its end (whatever its solver concluded).
_RAN = {ExecStatus.OK, ExecStatus.NO_SOLVE_CALL, ExecStatus.SOLVER_INFEASIBLE, ExecStatus.SOLVER_UNBOUNDED,
        ExecStatus.SOLVER_NUMERIC}


@dataclass(frozen=True)
class RewardWeights:
    match: float = 1.0
    executes: float = 0.0
    solves: float = 0.0
    feasible: float = 0.0
    equivalent: float = 0.0
    format: float = 0.0
    rule: str = "strict"  # contracts.tolerance rule of the objective match

    @classmethod
    def partial(cls) -> RewardWeights:
        """A shaped variant: small credit for each step towards a correct model."""
        return cls(executes=0.1, solves=0.1, feasible=0.2, equivalent=0.3, format=0.05)

    @classmethod
    def from_env(cls) -> RewardWeights:
        """``FLYWHEEL_REWARD=partial`` (shaped) or ``strict`` (default); ``FLYWHEEL_REWARD_FORMAT=0.1`` sets the
        format term."""
        base = cls.partial() if os.environ.get("FLYWHEEL_REWARD", "strict") == "partial" else cls()
        fmt = os.environ.get("FLYWHEEL_REWARD_FORMAT")
        return base if fmt is None else cls(**(asdict(base) | {"format": float(fmt)}))


@dataclass
class Score:
    reward: float | None  # None: infrastructure failure, no reward
    match: bool = False
    parts: dict[str, float] = field(default_factory=dict)
    status: str = ""  # execution status ("no_code" when nothing could be extracted)
    objective: float | None = None
    reason: str = ""


def parse_answer(answer: Any) -> float | str | None:
    """A dataset's ground truth: a number, "infeasible", or None (unknown)."""
    if answer is None:
        return None
    if isinstance(answer, str):
        text = answer.strip().lower()
        if text in ("infeasible", "inf", "no solution"):
            return "infeasible"
        try:
            return float(text)
        except ValueError:
            return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def completion_text(completion: Any) -> str:
    """A completion as text: a string, or a chat message list (TRL's conversational format: the assistant's
    contents), or one message dict."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        return "\n".join(str(m.get("content") or "") for m in completion if isinstance(m, dict)
                         and m.get("role", "assistant") == "assistant")
    return str(completion)


def has_format(text: str) -> bool:
    return bool(_FENCE.search(text))


def objective_match(execution: Execution, answer: float | str | None, rule: str = "strict") -> tuple[bool, str]:
    from contracts.tolerance import compare

    final = execution.final_solve
    if final is None or answer is None:
        return False, "no solve" if final is None else "no ground truth"
    if answer == "infeasible":
        ok = final.status.value == "infeasible"
        return ok, "" if ok else f"expected infeasible, solver said {final.status.value}"
    if final.objective is None or not math.isfinite(final.objective):
        return False, f"no objective (solver said {final.status.value})"
    c = compare(final.objective, float(answer), rule, mip_gap=final.mip_gap)
    return c.match, "" if c.match else f"objective {final.objective:g} vs {float(answer):g} (tol {c.tolerance:.3g})"


def _feasible_on_reference(execution: Execution, reference_mps: str) -> bool:
    from solvers.sandbox.verify import check_record

    final = execution.final_solve
    if final is None or not final.solution or final.objective is None:
        return False
    return check_record(reference_mps, final.solution, final.objective, final.sense) == ""


def _equivalent(execution: Execution, reference_mps: str) -> bool:
    from contracts.equivalence import compare_models

    final = execution.final_solve
    if final is None or not final.model_mps:
        return False
    try:
        return compare_models(reference_mps, final.model_mps, candidate_sense=final.sense).equivalent
    except Exception:  # noqa: BLE001 - an unreadable candidate model earns no credit, it does not fail the batch
        return False


def score(text: str, code: str | None, answer: Any, execution: Execution | None, weights: RewardWeights,
          reference_mps: str | None = None) -> Score:
    """Score one completion (``execution`` is None when no program could be extracted from it)."""
    fmt = weights.format if has_format(text) else 0.0
    parts: dict[str, float] = {"format": fmt} if weights.format else {}
    if code is None or execution is None:
        return Score(reward=fmt, parts=parts, status="no_code", reason="no program in the completion")
    if execution.status == ExecStatus.SANDBOX_ERROR:
        return Score(reward=None, status=str(execution.status), reason=execution.error or "sandbox error")
    gt = parse_answer(answer)
    match, reason = objective_match(execution, gt, weights.rule)
    if match:
        parts["match"] = weights.match
    else:
        if weights.executes and execution.status in _RAN:
            parts["executes"] = weights.executes
        if weights.solves and execution.solves:
            parts["solves"] = weights.solves
        if reference_mps and weights.feasible and _feasible_on_reference(execution, reference_mps):
            parts["feasible"] = weights.feasible
        if reference_mps and weights.equivalent and _equivalent(execution, reference_mps):
            parts["equivalent"] = weights.equivalent
    return Score(reward=float(round(sum(parts.values()), 6)), match=match, parts=parts, status=str(execution.status),
                 objective=execution.objective, reason=reason or execution.error)
