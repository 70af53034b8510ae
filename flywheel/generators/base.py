"""The generator family interface, the registry, and ``generate_problem``.

A family is two files: ``flywheel/generators/<name>.py``, a ``Family`` subclass decorated with ``@register`` that
knows how to sample data, break it on purpose (infeasible instances) and build the IR; and
``flywheel/generators/spec/<name>.json``, its declarative half: metadata, the story domains' vocabularies, the
sets and parameters the IR declares from the data, and the question templates (Jinja). Everything else (ids,
generic phrasings, formulation text, ground truth, reference programs) is shared here.

Adding a family (the checklist; flywheel/generators/README.md says more):

1. ``spec/<name>.json`` shaped like ``spec/diet.json``: ``problem_class`` (LP | IP | MILP | QP), ``techniques``
   (from ``TECHNIQUES``), ``domains`` (>= 3 story domains, each with its ``sector``, one of
   ``APPLICATION_DOMAINS``, and its own vocabulary), optionally ``reorder_keys`` (the lists of the data that the
   reordered phrasing may shuffle, where some lists have a natural order), ``version`` (bump it when a change
   alters the records of a seed), ``sets`` and ``params`` (what ``builder`` declares), and ``templates``.
2. ``sample(rng, difficulty, domain)``: only the ``rng`` passed in; size grows with ``difficulty``; every number
   an int or a short decimal (the question must state it exactly); keep difficulty <= 3 solving well under 1 s.
   ``self.vocab[domain]`` is the domain's vocabulary.
3. ``make_infeasible``: a provable reason (say it in the module docstring).
4. ``build``: ``b = self.builder(data)`` declares the spec's sets and parameters (every number *as the question
   states it*: 90 minutes stays 90; convert in the coefficients); add the variables and constraints; linearise
   big-M / either-or / piecewise / min-max / abs / ratio yourself.
5. ``templates``: >= 4 (a table, a story, units to convert, integrality left to the nouns, ...), each with its
   ``styles``; a template sees the data's keys, ``data``, ``v`` (the vocabulary), ``domain``, the text helpers
   (``join``, ``listing``, ``table``, ``number_text``, ...), the module's names and whatever ``fields(data, v,
   domain)`` returns (listings and rules that take more than a lookup). ``Family.phrase`` adds the generic story /
   distractor / reordered / implied-integrality variants on top.
6. Run ``tests/test_generators.py -k <name>`` and ``tests/test_render_matrix.py -k <name> -m slow``.

Determinism: every random choice flows from ``numpy.random.default_rng(seed)``; the same (family, seed,
difficulty) gives a byte-identical record.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import inspect
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import jinja2
import jinja2.meta
import numpy as np

from flywheel.generators._phrasing import (
    APPLICATION_DOMAINS,
    STYLES,
    TECHNIQUES,
    Question,
    distractor_facts,
    drop_integrality,
    insert_before_last,
    numbers_in,
    reorder,
    reorder_sentences,
    story_intro,
    text_rng,
    tidy,
)
from solvers.builder import ModelBuilder
from solvers.errors import FlywheelError, unknown_name
from solvers.ir import Model, as_jsonable
from solvers.records import Problem, canonical_json, content_hash

FAMILIES: dict[str, type[Family]] = {}

MIN_DIFFICULTY, MAX_DIFFICULTY = 1, 5


def register(cls: type[Family]) -> type[Family]:
    """Class decorator: make a family available by its ``name``, after checking its metadata against the fixed
    vocabularies (techniques, application domains, phrasing styles)."""
    if "name" not in vars(cls):
        # The module's name is the family's: one name, not two to keep in step.
        cls.name = cls.__module__.rsplit(".", 1)[-1]
    if cls.name in FAMILIES and FAMILIES[cls.name] is not cls:
        raise ValueError(f"family {cls.name!r} registered twice")
    where = f"family {cls.name}"
    _apply_spec(cls, load_spec(cls.name))
    if "domains" not in vars(cls):
        # The story domains are the keys of ``sectors`` (one application domain each), in that order: one list,
        # not two to keep in step.
        cls.domains = tuple(getattr(cls, "sectors", {}))
    bad = [t for t in cls.techniques if t not in TECHNIQUES]
    if bad:
        raise FlywheelError(f"unknown techniques {bad}; known: {', '.join(TECHNIQUES)}", culprit=where)
    sectors = getattr(cls, "sectors", {})
    if set(sectors) != set(cls.domains) or not set(sectors.values()) <= set(APPLICATION_DOMAINS):
        raise FlywheelError(f"sectors must map every domain {list(cls.domains)} to one of "
                            f"{', '.join(APPLICATION_DOMAINS)}; got {sectors}", culprit=where)
    bad_styles = [s for t in cls.template_styles for s in t if s not in STYLES]
    if bad_styles or len(cls.template_styles) not in (0, cls.n_templates):
        raise FlywheelError(f"template_styles: one tuple of {STYLES} per own template ({cls.n_templates}); "
                            f"got {cls.template_styles}", culprit=where)
    if not cls.templates and cls.question is Family.question:
        raise FlywheelError(f"no question templates: add 'templates' to {SPEC_DIR / cls.name}.json (or override "
                            "question())", culprit=where)
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
    version: ClassVar[str] = "1"  # bump when a change alters the records of a seed
    problem_class: ClassVar[str]  # LP | IP | MILP | QP
    domains: ClassVar[tuple[str, ...]]  # default (set by ``register``): the keys of ``sectors``, in order
    n_templates: ClassVar[int] = 4  # the family's own templates; ``n_phrasings`` adds the generic variants
    # Story domain -> application domain (one of APPLICATION_DOMAINS): what SQL slices by, and whose stories and
    # distractor facts the generic phrasings tell.
    sectors: ClassVar[dict[str, str]]
    techniques: ClassVar[tuple[str, ...]] = ()  # modelling techniques the model needs (from TECHNIQUES)
    # One tuple of STYLES per own template; "table" marks the one the generic table variant reuses.
    template_styles: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Lists of ``data`` that the reordered variant may permute; None = every top-level list of names.
    reorder_keys: ClassVar[tuple[str, ...] | None] = None
    # From the family's spec file (``spec/<name>.json``, see ``load_spec``): the story domains' vocabularies, the
    # own templates (Jinja), the sets and parameters ``builder`` declares, the builder's model name.
    vocab: ClassVar[dict[str, dict[str, Any]]] = {}
    templates: ClassVar[tuple[str, ...]] = ()
    sets: ClassVar[dict[str, str]] = {}
    params: ClassVar[dict[str, tuple[str, tuple[str, ...], str, str, bool]]] = {}
    model_name: ClassVar[str] = ""

    @abstractmethod
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        """Random instance data (entity names and numbers) at the given difficulty (1 = smallest)."""

    @abstractmethod
    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        """A copy of ``data`` perturbed so that the model provably has no feasible solution."""

    @abstractmethod
    def build(self, data: dict[str, Any]) -> Model:
        """The IR of the instance. Parameters hold every number of ``data``."""

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        """The word problem, in phrasing ``template`` (0 .. n_templates-1): the spec's Jinja template rendered over
        the instance data, the domain's vocabulary ``v``, ``domain`` and ``fields(data, v, domain)`` (later names
        win), with the family module's own names (helpers, constants) and Python's builtins in scope."""
        if not 0 <= template < self.n_templates:
            raise FlywheelError(f"own template {template} of {self.n_templates}: the generic variants (>= "
                                f"{self.n_templates}) are phrase()'s", culprit=f"family {self.name}")
        v = self.vocab[domain]
        template_obj, names = _compiled(type(self))[template]
        context = {**data, **names, "data": data, "v": v, "domain": domain, **self.fields(data, v, domain)}
        try:
            return template_obj.render(context)
        except jinja2.UndefinedError as exc:
            raise FlywheelError(f"template {template}: {exc.message}", culprit=f"{SPEC_DIR / self.name}.json") from None

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        """Text the templates need that is more than a lookup (listings, rules): name -> value. Default none."""
        return {}

    def builder(self, data: dict[str, Any]) -> ModelBuilder:
        """A ``ModelBuilder`` with the spec's ``sets`` and ``params`` declared from ``data`` (in spec order)."""
        b = ModelBuilder(self.model_name or self.name)
        for set_name, desc in self.sets.items():
            b.add_set(set_name, data[set_name], desc)
        for par, (key, index, unit, desc, derived) in self.params.items():
            b.add_param(par, data[key], index, unit, desc, derived=derived)
        return b

    @classmethod
    def code_hash(cls) -> str:
        """Hash of the family's source: part of every problem's lineage."""
        return _code_hash(cls)

    # ---- phrasings: own templates, then the generic variants ---------------------------------------------

    @classmethod
    def n_phrasings(cls) -> int:
        return cls.n_templates + len(GENERIC_VARIANTS)

    @classmethod
    def styles_of(cls, template: int) -> tuple[str, ...]:
        """The declared styles of phrasing ``template`` (own or generic)."""
        if template < cls.n_templates:
            return cls.template_styles[template] if template < len(cls.template_styles) else ("plain",)
        return GENERIC_VARIANTS[template - cls.n_templates][0]

    def phrase(self, data: dict[str, Any], template: int, domain: str, model: Model | None = None) -> Question:
        """The question in phrasing ``template`` (0 .. n_phrasings()-1): the family's own templates first, so
        every phrasing a family had before stays reachable, then the generic variants (story, distractors,
        reordered data, integrality implied by the nouns) built on them. Returns a ``Question`` carrying its
        distractor numbers. ``model``: ``build(data)`` where the caller has it (else built here when needed)."""
        if not 0 <= template < self.n_phrasings():
            raise FlywheelError(f"template must be in [0, {self.n_phrasings() - 1}], got {template}",
                                culprit=f"family {self.name}")
        if template < self.n_templates:
            text = self.question(data, template, domain)
            if isinstance(text, Question):
                return Question(tidy(text), text.distractors, text.styles)
            return Question(tidy(text), styles=self.styles_of(template))
        styles, base = GENERIC_VARIANTS[template - self.n_templates]
        base_template = self._base_template(base)
        rng = text_rng(self.name, data, template, domain)
        sector = self.sectors[domain]
        if "reordered" in styles:
            keys = self.reorder_keys if self.reorder_keys is not None else [
                k for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, str) for x in v)]
            base_q = self.question(reorder(data, keys, rng), base_template, domain)
            if not any(len(data.get(k) or []) >= 2 for k in keys):
                # Nothing may be shuffled (periods in time order): state the same facts in another sentence order.
                base_q = Question(reorder_sentences(str(base_q), rng), getattr(base_q, "distractors", ()),
                                  getattr(base_q, "styles", ()))
        else:
            base_q = self.question(data, base_template, domain)
        text = str(base_q)
        out_styles = set(styles) | set(getattr(base_q, "styles", ()))
        if "implied_integrality" in styles:
            text, dropped = drop_integrality(text)
            if not dropped:
                out_styles.discard("implied_integrality")
        distractors = list(getattr(base_q, "distractors", ()))
        if "distractors" in styles:
            # Avoid the model's derived numbers too (a big-M, n - 1 in MTZ): the question never states them, but a
            # distractor equal to one would pass a coverage check as data.
            derived = {float(x) for p in (model or self.build(data)).params for x in p.numbers()}
            facts, extra = distractor_facts(sector, rng, numbers_in(text) | derived, k=2)
            text = insert_before_last(text, facts)
            distractors += extra
        if "story" in styles:
            text = story_intro(sector, rng) + " " + text
        return Question(tidy(text), distractors,
                        sorted(out_styles | set(self.styles_of(base_template)) - {"plain"}))

    def _base_template(self, base: str) -> int:
        """Which own template a generic variant builds on: ``table`` -> the declared table template."""
        if base == "table":
            return next((i for i, s in enumerate(self.template_styles) if "table" in s), min(2, self.n_templates - 1))
        return int(base) % self.n_templates


def pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    """One of ``items``, drawn uniformly (one ``rng.integers`` call)."""
    return items[int(rng.integers(len(items)))]


def exceed(data: dict[str, Any], field: str, key: str, bound: Any, slack: Any) -> dict[str, Any]:
    """The infeasibility lever most families share: a copy of ``data`` with ``data[field][key]`` set to
    ``int(bound + slack)``, where ``bound`` is the most the instance can ever deliver for that entry (a demand,
    a requirement, a cover count) and ``slack`` > 0 (an ``rng.integers`` draw or a constant) pushes it past that."""
    return replace_at(data, (field, key), int(bound + slack))


def replace_at(data: dict[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    """A copy of ``data`` with the entry at ``path`` (``("demand", product, period)`` is
    ``data["demand"][product][period]``) set to ``value``: the other levers of ``make_infeasible`` (a deadline
    below the shortest schedule, one period's demand over its capacity). Only the dicts along the path are copied;
    ``data`` itself is left as it was."""
    head, *rest = path
    return {**data, head: replace_at(data[head], rest, value) if rest else value}


@functools.cache
def _code_hash(cls: type) -> str:
    # The whole module, not just the class (module-level helpers shape the questions too), and the spec file
    # (vocabularies, templates, parameters). inspect.getsource re-reads and re-tokenises the file (about a third
    # of generate_problem's time); the source cannot change within one process, so once per class is enough.
    module = inspect.getmodule(cls)
    source = inspect.getsource(module if module is not None else cls)
    spec = SPEC_DIR / f"{getattr(cls, 'name', '')}.json"
    return hashlib.sha256((source + (spec.read_text() if spec.exists() else "")).encode()).hexdigest()[:16]


# ---- family specs: the data half of a family ----------------------------------------------------------------

SPEC_DIR = Path(__file__).with_name("spec")
_SPEC_KEYS = ("version", "problem_class", "techniques", "reorder_keys", "model", "domains", "sets", "params",
              "templates")
_PARAM_KEYS = ("index", "unit", "description", "from", "derived")


@functools.cache
def load_spec(name: str) -> dict[str, Any]:
    """``spec/<name>.json``, the declarative half of family ``name`` (empty when there is none)::

        {"problem_class": "LP", "version": "1", "techniques": [...], "reorder_keys": [...],
         "domains": {"<story domain>": {"sector": "<application domain>", "<word>": ..., ...}, ...},
         "sets": {"<set>": "<description>"},
         "params": {"<param>": {"index": [...], "unit": "...", "description": "...", "from": "<data key>"}},
         "templates": [{"styles": [...], "text": "<Jinja template>"}, ...]}
    """
    path = SPEC_DIR / f"{name}.json"
    if not path.exists():
        return {}
    try:
        spec = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FlywheelError(f"{path}: not valid JSON ({exc})", culprit=str(path)) from None
    for key in spec:
        if key not in _SPEC_KEYS:
            raise unknown_name(f"key of {path}", key, list(_SPEC_KEYS))
    for par, entry in spec.get("params", {}).items():
        for key in entry:
            if key not in _PARAM_KEYS:
                raise unknown_name(f"key of {path} params.{par}", key, list(_PARAM_KEYS))
    return spec


def _apply_spec(cls: type[Family], spec: dict[str, Any]) -> None:
    """Set a family's class attributes from its spec (a key the spec leaves out keeps the class's value)."""
    if not spec:
        return
    where = f"{SPEC_DIR / cls.name}.json"
    for key in ("version", "problem_class", "model"):
        if key in spec:
            setattr(cls, "model_name" if key == "model" else key, spec[key])
    cls.techniques = tuple(spec.get("techniques", cls.techniques))
    if "reorder_keys" in spec:
        cls.reorder_keys = tuple(spec["reorder_keys"])
    if "domains" in spec:
        missing = [d for d, entry in spec["domains"].items() if "sector" not in entry]
        if missing:
            raise FlywheelError(f"domains {missing} lack a 'sector'", culprit=where)
        cls.domains = tuple(spec["domains"])
        cls.sectors = {d: entry["sector"] for d, entry in spec["domains"].items()}
        cls.vocab = {d: {k: x for k, x in entry.items() if k != "sector"} for d, entry in spec["domains"].items()}
    if "templates" in spec:
        cls.templates = tuple(t["text"] for t in spec["templates"])
        cls.template_styles = tuple(tuple(t.get("styles", ("plain",))) for t in spec["templates"])
        cls.n_templates = len(cls.templates)
    cls.sets = dict(spec.get("sets", {}))
    cls.params = {par: (e.get("from", par), tuple(e.get("index", ())), e.get("unit", ""), e.get("description", ""),
                        bool(e.get("derived", False)))
                  for par, e in spec.get("params", {}).items()}


@functools.cache
def _template_helpers() -> dict[str, Any]:
    """What every template may call: the text helpers (``join``, ``listing``, ``table``, ``money``, ``plural``,
    ``names``, ``minutes``, ``percent``, ``per_dozen``, ``thousands``, ``number_text``, ``pairs_text``, ``grid``)."""
    from flywheel.generators import _phrasing, _routing, _text
    from solvers.ir import number_text

    picked = {m: getattr(_text, m) for m in ("join", "listing", "table", "money", "plural", "names")}
    picked |= {m: getattr(_phrasing, m) for m in ("minutes", "percent", "per_dozen", "thousands")}
    picked |= {m: getattr(_routing, m) for m in ("pairs_text", "grid")}
    return picked | {"number_text": number_text}


_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@functools.cache
def _compiled(cls: type[Family]) -> tuple[tuple[jinja2.Template, dict[str, Any]], ...]:
    """Each own template compiled once, with the names it uses from the family's module and Python's builtins
    (what an f-string in the module could see)."""
    scope = {**vars(builtins), **_template_helpers(), **vars(sys.modules[cls.__module__])}
    out = []
    for i, text in enumerate(cls.templates):
        try:
            parsed = _JINJA.parse(text)
        except jinja2.TemplateSyntaxError as exc:
            raise FlywheelError(f"template {i}: {exc}", culprit=f"{SPEC_DIR / cls.name}.json") from None
        names = {n: scope[n] for n in jinja2.meta.find_undeclared_variables(parsed) if n in scope}
        out.append((_JINJA.from_string(parsed), names))  # compiled from the parsed tree: one parse per template
    return tuple(out)


# The generic variants every family gets after its own templates: (styles, own template they build on).
GENERIC_VARIANTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("story",), "0"),
    (("story", "distractors"), "1"),
    (("table", "distractors"), "table"),
    (("reordered", "implied_integrality"), "3"),
)


def family_names() -> list[str]:
    _load_families()
    return sorted(FAMILIES)


def get_family(name: str) -> Family:
    _load_families()
    if name not in FAMILIES:
        raise unknown_name("family", name, list(FAMILIES))
    return FAMILIES[name]()


@functools.cache
def _load_families() -> None:
    """Import every module of the package so the ``@register`` decorators run (once per process: scanning the
    package on every ``get_family`` was a quarter of ``generate_problem``'s time)."""
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
    template = int(rng.integers(fam.n_phrasings()))
    infeasible = bool(rng.random() < infeasible_share)
    data = as_jsonable(fam.sample(rng, level, domain))
    if infeasible:
        data = as_jsonable(fam.make_infeasible(data, rng))
    ir = fam.build(data)
    question = fam.phrase(data, template, domain, ir)
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
        question=str(question),
        ir=ir,
        formulation=formulation_text(ir),
        infeasible_by_design=infeasible,
        label_source="generator",
        template_id=f"{fam.name}/t{template}",
        domain=domain,
        application_domain=fam.sectors[domain],
        techniques=tuple(fam.techniques),
        distractors=question.distractors,
    )
