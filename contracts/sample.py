"""What a contract looks at: a ``Sample`` (problem, attempt, execution) and the answer-blind view repairs get.

Repairs must never see the answer. Instead of trusting repair authors, the engine hands a repair a
``BlindSample`` whose problem is a ``BlindProblem``: a different type that simply has no ``ground_truth``,
``reference_programs``, ``ir`` or ``formulation`` field (the IR could be solved to recover the answer). Reading any of
them raises ``AttributeError``, which the engine records as a ``contract_error`` verdict.

Contracts from user files get the same view (with the execution, once there is one), in the blind process
(``contracts.blind``); an answer-aware check gets the ``Answer`` beside it as an explicit argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from solvers.ir import Model
from solvers.records import Attempt, Execution, GroundTruth, Problem


class _AttemptView:
    """``sample_id`` and ``code``, read from the ``attempt`` field that both sample types carry."""

    if TYPE_CHECKING:  # a field of the pydantic models that mix this in; a runtime annotation would reorder them
        attempt: Attempt

    @property
    def sample_id(self) -> str:
        return self.attempt.attempt_id

    @property
    def code(self) -> str:
        """The program to judge: the attempt's extracted code, else whatever code the response holds."""
        if self.attempt.code:
            return self.attempt.code
        from contracts.extract import extract_code

        return extract_code(self.attempt.response) or ""


class Sample(_AttemptView, BaseModel):
    """One attempt at one problem, with its execution once the sandbox has run it.

    ``sample_id`` is the attempt id: an attempt is a content hash of (problem, policy, prompt, index, response), so
    the same sample always gets the same id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem: Problem
    attempt: Attempt
    execution: Execution | None = None

    def blind(self, with_execution: bool = False) -> BlindSample:
        """The answer-blind view handed to repairs (no ground truth, no reference model or programs) and, with the
        execution (what the candidate's own program did), to the checks of user contract files."""
        p = self.problem
        return BlindSample(
            problem=BlindProblem(problem_id=p.problem_id, family=p.family, question=p.question, domain=p.domain,
                                 difficulty=p.difficulty, template_id=p.template_id),
            attempt=self.attempt, execution=self.execution if with_execution else None,
        )

    def answer(self) -> Answer:
        """What an answer-aware check is handed explicitly: the verified answer and the reference model."""
        p = self.problem
        return Answer(ground_truth=p.ground_truth, ir=p.ir, infeasible_by_design=p.infeasible_by_design)


class BlindProblem(BaseModel):
    """The parts of a problem a repair may read: what the policy itself was shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem_id: str
    family: str
    question: str
    domain: str = ""
    difficulty: int = 0
    template_id: str = ""


class BlindSample(_AttemptView, BaseModel):
    """A sample as a repair sees it: the question and the attempt, never the answer. A user file's after-execution
    check also gets the candidate's execution (the repairs, which run before execution, never do)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem: BlindProblem
    attempt: Attempt
    execution: Execution | None = None


class Answer(BaseModel):
    """The answer side of a problem, the second argument of an answer-aware check (``@contract(answer_aware=True)``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ground_truth: GroundTruth | None = None
    ir: Model | None = None
    infeasible_by_design: bool = False


def with_code(sample: Sample, code: str, **attempt_changes: Any) -> Sample:
    """A copy of the sample whose attempt carries ``code`` (and no execution: the new code has not run yet)."""
    attempt = sample.attempt.model_copy(update={"code": code, **attempt_changes})
    return Sample(problem=sample.problem, attempt=attempt, execution=None)
