"""What a contract looks at: a ``Sample`` (problem, attempt, execution) and the answer-blind view repairs get.

Repairs must never see the answer. Instead of trusting repair authors, the engine hands a repair a
``BlindSample`` whose problem is a ``BlindProblem``: a different type that simply has no ``ground_truth``,
``reference_programs``, ``ir`` or ``formulation`` field (the IR could be solved to recover the answer). Reading any of
them raises ``AttributeError``, which the engine records as a ``contract_error`` verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from solvers.records import Attempt, Execution, Problem


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

    def blind(self) -> BlindSample:
        """The answer-blind view handed to repair contracts (no ground truth, no reference model or programs)."""
        p = self.problem
        return BlindSample(
            problem=BlindProblem(problem_id=p.problem_id, family=p.family, question=p.question, domain=p.domain,
                                 difficulty=p.difficulty, template_id=p.template_id),
            attempt=self.attempt,
        )


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
    """A sample as a repair sees it: the question and the attempt, never the answer or an execution."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem: BlindProblem
    attempt: Attempt


def with_code(sample: Sample, code: str, **attempt_changes: Any) -> Sample:
    """A copy of the sample whose attempt carries ``code`` (and no execution: the new code has not run yet)."""
    attempt = sample.attempt.model_copy(update={"code": code, **attempt_changes})
    return Sample(problem=sample.problem, attempt=attempt, execution=None)
