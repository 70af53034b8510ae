"""The generator family interface, the registry, and ``generate_problem``.

A family is one small module that subclasses ``Family`` and decorates itself with ``@register``. It only knows
how to sample data, break it on purpose (infeasible instances), build the IR and tell the story; everything
else (ids, templates, domains, formulation text, ground truth, reference programs) is shared here.

Determinism: every random choice flows from ``numpy.random.default_rng(seed)``; the same (family, seed,
difficulty) gives a byte-identical record.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from solvers.errors import FlywheelError, unknown_name
from solvers.ir import Model, as_jsonable
from solvers.records import Problem, canonical_json, content_hash

FAMILIES: dict[str, type[Family]] = {}

MIN_DIFFICULTY, MAX_DIFFICULTY = 1, 5


def register(cls: type[Family]) -> type[Family]:
    """Class decorator: make a family available by its ``name``."""
    if cls.name in FAMILIES and FAMILIES[cls.name] is not cls:
        raise ValueError(f"family {cls.name!r} registered twice")
    FAMILIES[cls.name] = cls
    return cls


class Family(ABC):
    """One kind of OR problem.

    Subclasses set the class attributes and implement the four methods. ``sample`` returns JSON-able data with
    every number the model needs (and entity names); ``build`` turns that data into the IR; ``question`` tells
    it as a word problem that states every number (with units) in one of ``n_templates`` phrasings, for one of
    the ``domains``.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    problem_class: ClassVar[str]  # LP | IP | MILP | QP
    domains: ClassVar[tuple[str, ...]]
    n_templates: ClassVar[int] = 4

    @abstractmethod
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        """Random instance data (entity names and numbers) at the given difficulty (1 = smallest)."""

    @abstractmethod
    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        """A copy of ``data`` perturbed so that the model provably has no feasible solution."""

    @abstractmethod
    def build(self, data: dict[str, Any]) -> Model:
        """The IR of the instance. Parameters hold every number of ``data``."""

    @abstractmethod
    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        """The word problem, in phrasing ``template`` (0 .. n_templates-1)."""

    @classmethod
    def code_hash(cls) -> str:
        """Hash of the family's source: part of every problem's lineage."""
        return _code_hash(cls)


def pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    """One of ``items``, drawn uniformly (one ``rng.integers`` call)."""
    return items[int(rng.integers(len(items)))]


def exceed(data: dict[str, Any], field: str, key: str, bound: Any, slack: Any) -> dict[str, Any]:
    """The infeasibility lever most families share: a copy of ``data`` with ``data[field][key]`` set to
    ``int(bound + slack)``, where ``bound`` is the most the instance can ever deliver for that entry (a demand,
    a requirement, a cover count) and ``slack`` > 0 (an ``rng.integers`` draw or a constant) pushes it past that."""
    return {**data, field: {**data[field], key: int(bound + slack)}}


@functools.cache
def _code_hash(cls: type) -> str:
    # The whole module, not just the class: module-level vocabularies (``_DOMAINS``) shape the questions too.
    # inspect.getsource re-reads and re-tokenises the file (about a third of generate_problem's time); the source
    # cannot change within one process, so once per class is enough.
    module = inspect.getmodule(cls)
    return hashlib.sha256(inspect.getsource(module if module is not None else cls).encode()).hexdigest()[:16]


def family_names() -> list[str]:
    _load_families()
    return sorted(FAMILIES)


def get_family(name: str) -> Family:
    _load_families()
    if name not in FAMILIES:
        raise unknown_name("family", name, list(FAMILIES))
    return FAMILIES[name]()


def _load_families() -> None:
    """Import every module of the package so the ``@register`` decorators run."""
    import importlib
    import pkgutil

    import flywheel.generators as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in {"base"} and not info.name.startswith("_"):
            importlib.import_module(f"flywheel.generators.{info.name}")


def derive_seed(round_seed: int, index: int) -> int:
    """The seed of problem ``index`` in a round seeded ``round_seed`` (independent streams, 31-bit)."""
    return int(np.random.SeedSequence([round_seed, index]).generate_state(1)[0] & 0x7FFFFFFF)


def generate_problem(
    family: str,
    seed: int,
    difficulty: int | None = None,
    infeasible_share: float = 0.0,
) -> Problem:
    """Generate one problem (IR, question, formulation) without ground truth or reference programs.

    ``difficulty`` None draws it from the seed. With probability ``infeasible_share`` the instance is
    deliberately made infeasible (and says so in ``infeasible_by_design``).
    """
    from solvers.render.formulation import formulation_text

    fam = get_family(family)
    if difficulty is not None and not MIN_DIFFICULTY <= difficulty <= MAX_DIFFICULTY:
        raise FlywheelError(f"difficulty must be in [{MIN_DIFFICULTY}, {MAX_DIFFICULTY}], got {difficulty}",
                            culprit="difficulty")
    rng = np.random.default_rng(seed)
    level = int(rng.integers(MIN_DIFFICULTY, MAX_DIFFICULTY + 1)) if difficulty is None else difficulty
    domain = pick(rng, fam.domains)
    template = int(rng.integers(fam.n_templates))
    infeasible = bool(rng.random() < infeasible_share)
    data = as_jsonable(fam.sample(rng, level, domain))
    if infeasible:
        data = as_jsonable(fam.make_infeasible(data, rng))
    ir = fam.build(data)
    question = fam.question(data, template, domain)
    key = canonical_json(
        {"family": fam.name, "version": fam.version, "seed": seed, "difficulty": level, "question": question,
         "ir": ir.content_hash()}
    )
    return Problem(
        problem_id=content_hash(key),
        family=fam.name,
        generator_version=fam.version,
        generator_code_hash=fam.code_hash(),
        seed=seed,
        difficulty=level,
        params=data,
        question=question,
        ir=ir,
        formulation=formulation_text(ir),
        infeasible_by_design=infeasible,
        label_source="generator",
        template_id=f"{fam.name}/t{template}",
        domain=domain,
    )
