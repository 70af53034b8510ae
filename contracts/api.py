"""The authoring API: ``@contract`` turns a plain function over a sample into a registered, versioned check.

A check returns a ``Verdict``; a repair (``severity="repair"``) returns a ``Repair`` (new code plus what changed) or
``None`` when it has nothing to fix. A check that needs the answer says so (``answer_aware=True``) and receives it as
an explicit argument, ``fn(sample, answer, **params)``; contracts from user files run only in the blind process
(``contracts.blind``), where that argument is the one way the answer arrives. The version of a contract is a hash of its source and its parameters, so
changing either gives new verdicts a new version and old verdicts stay attributable.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from solvers.errors import FlywheelError, unknown_name
from solvers.records import canonical_json


class Stage(StrEnum):
    """When a contract runs: on the response alone, or on what the sandbox captured."""

    BEFORE = "before_execution"
    AFTER = "after_execution"


class Severity(StrEnum):
    """What a failure means: the sample is dropped, only noted, or the contract rewrites the program."""

    REJECT = "reject"
    WARN = "warn"
    REPAIR = "repair"


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    CONTRACT_ERROR = "contract_error"


class Verdict(BaseModel):
    """What a check concluded about one sample. ``evidence`` must be JSON-able; it is stored with the row.

    ``dispute`` marks a sample that should go to the dispute queue instead of failing (the candidate beats its
    ground truth while feasible on the reference, or the ground truth's solvers disagree).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Outcome
    score: float | None = None
    message: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)
    dispute: str = ""  # non-empty: the dispute kind

    @classmethod
    def passed(cls, message: str = "", score: float = 1.0, **evidence: Any) -> Verdict:
        return cls(outcome=Outcome.PASS, score=score, message=message, evidence=evidence)

    @classmethod
    def failed(cls, message: str, score: float = 0.0, **evidence: Any) -> Verdict:
        return cls(outcome=Outcome.FAIL, score=score, message=message, evidence=evidence)

    @classmethod
    def skipped(cls, message: str, **evidence: Any) -> Verdict:
        return cls(outcome=Outcome.SKIP, message=message, evidence=evidence)

    @classmethod
    def disputed(cls, kind: str, message: str, **evidence: Any) -> Verdict:
        return cls(outcome=Outcome.SKIP, message=message, evidence=evidence, dispute=kind)


class Repair(BaseModel):
    """A repaired program and what was changed. ``kind`` names the repair (e.g. ``strip_fences``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    kind: str
    message: str = ""


ContractFn = Callable[..., Any]


@dataclass(frozen=True)
class Contract:
    """A registered contract: the function plus its metadata and bound parameters."""

    name: str
    fn: ContractFn
    stage: Stage
    severity: Severity
    cost: float  # relative cost hint: the engine runs cheap contracts first
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""  # where it was defined (module or file), for `contracts list`
    answer_aware: bool = False  # called as fn(sample, answer, **params): the answer is an explicit argument

    @cached_property
    def version(self) -> str:
        """Hash of the function's source and the bound parameters (12 hex digits)."""
        code = getattr(self.fn, "source_text", "")  # a user file's function: its source, as the blind process read it
        if not code:
            code = function_source(self.fn)
        payload = code + "\n" + canonical_json(self.params)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def with_params(self, **params: Any) -> Contract:
        """The same contract with some parameters overridden (unknown names are an error)."""
        unknown = set(params) - set(self.params)
        if unknown:
            name = sorted(unknown)[0]
            raise unknown_name(f"parameter of contract {self.name}", name, list(self.params))
        return replace(self, params={**self.params, **params})

    def __call__(self, sample: Any, answer: Any = None) -> Any:
        if self.answer_aware:
            return self.fn(sample, answer, **self.params)
        return self.fn(sample, **self.params)


def function_source(fn: ContractFn) -> str:
    """The dedented source of ``fn`` (what its version hashes); the bytecode where no source exists (a REPL)."""
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return repr(fn.__code__.co_code)


REGISTRY: dict[str, Contract] = {}


def contract(
    name: str | None = None,
    *,
    stage: Stage | str = Stage.AFTER,
    severity: Severity | str = Severity.REJECT,
    cost: float = 1.0,
    description: str = "",
    answer_aware: bool = False,
    **params: Any,
) -> Callable[[ContractFn], Contract]:
    """Decorator: register ``fn(sample, **params) -> Verdict`` (or ``-> Repair | None`` for repairs).

    Keyword arguments other than the metadata are the contract's parameters and their defaults; a suite can
    override them. Repairs must run before execution and receive a ``BlindSample`` (no ground truth). An
    ``answer_aware`` check is called ``fn(sample, answer, **params)`` with the problem's ``Answer`` (ground truth and
    reference model); it cannot be a repair: what it returns is a verdict, never code.
    """

    def wrap(fn: ContractFn) -> Contract:
        sev = Severity(severity)
        stg = Stage(stage)
        if sev == Severity.REPAIR and stg != Stage.BEFORE:
            raise FlywheelError("a repair contract must run before execution", culprit=f"contract {fn.__name__}")
        if sev == Severity.REPAIR and answer_aware:
            raise FlywheelError("a repair never sees the answer: it cannot be answer_aware",
                                culprit=f"contract {fn.__name__}")
        doc = (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ")
        spec = Contract(name=name or fn.__name__, fn=fn, stage=stg, severity=sev, cost=float(cost),
                        params=dict(params), description=description or doc,
                        source=getattr(fn, "__module__", "") or "", answer_aware=bool(answer_aware))
        _register(spec)
        return spec

    return wrap


def _register(spec: Contract) -> None:
    old = REGISTRY.get(spec.name)
    if old is not None and old.source != spec.source:
        where = (getattr(old.fn, "path", None) or getattr(sys.modules.get(old.source), "__file__", None)
                 or old.source)
        raise FlywheelError(f"contract {spec.name!r} is already defined in {where}",
                            culprit=f"contract {spec.name}")
    REGISTRY[spec.name] = spec  # re-loading the same file replaces its own definition


def get_contract(name: str) -> Contract:
    load_builtins()
    if name not in REGISTRY:
        raise unknown_name("contract", name, list(REGISTRY))
    return REGISTRY[name]


def contract_names() -> list[str]:
    load_builtins()
    return sorted(REGISTRY)


def load_builtins() -> None:
    """Import the built-in contract modules so their decorators run."""
    import contracts.builtin  # noqa: F401
