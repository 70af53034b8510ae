"""The plan of a round: everything that decides its content, validated up front, hashed to identify the round."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flywheel.config import FlywheelConfig
from flywheel.generators.base import derive_seed, family_names, get_family
from solvers.errors import ConfigError, unknown_name
from solvers.records import canonical_json, content_hash
from solvers.render import APIS


@dataclass(frozen=True)
class RoundPlan:
    """Everything that decides a round's content. Its hash identifies the round: same plan -> same round."""

    problems: int
    families: tuple[str, ...]
    seed: int
    difficulty: int | None
    infeasible_share: float
    api: str  # one of APIS, or "rotate"
    sandbox: dict[str, Any] = field(default_factory=dict)
    suite: str | None = None  # contract suite run after execution; None = the default suite if one exists
    policy: str | None = None  # policy spec (flywheel.policies); None = reference programs only
    samples: int = 1  # policy samples per problem
    temperature: float = 0.7
    policy_settings: dict[str, Any] = field(default_factory=dict)  # the config's [policy] section
    problems_file: str | None = None  # benchmark-shaped JSONL instead of generated problems
    problems_file_hash: str = ""  # its content: the same path with new content is a new round
    # Where the generate stage runs ("local" fork pool or "ray") and the Ray address: placement, not content, so
    # neither enters to_json (the config hash).
    backend: str = "local"
    address: str | None = None

    @classmethod
    def from_config(cls, cfg: FlywheelConfig, suite: str | None = None, policy: str | None = None,
                    samples: int = 1, temperature: float = 0.7, problems_file: str | None = None) -> RoundPlan:
        """Validate names (families, API, the problems file) up front, so bad input fails before the store is
        touched."""
        file_hash, n_problems = "", cfg.round.problems
        if problems_file is not None:
            from flywheel.policies import load_problems_file

            loaded = load_problems_file(problems_file)  # a bad line raises ConfigError naming FILE:LINE
            if not loaded:
                raise ConfigError("the problems file holds no problems", culprit=problems_file)
            file_hash = content_hash(canonical_json([p.model_dump(mode="json") for p in loaded]))
            n_problems = len(loaded)
            families = tuple(sorted({p.family for p in loaded}))
        else:
            families = tuple(cfg.round.families) or tuple(family_names())
            for name in families:
                get_family(name)  # raises UnknownNameError naming the family and the nearest known one
        if len(set(families)) != len(families):
            raise ConfigError("a family is listed twice", culprit="--families")
        if cfg.round.api != "rotate" and cfg.round.api not in APIS:
            raise unknown_name("solver API", cfg.round.api, [*APIS, "rotate"])
        if policy is not None:
            if samples < 1:
                raise ConfigError("samples must be at least 1", culprit="--samples")
            if temperature < 0:
                raise ConfigError("temperature must be >= 0", culprit="--temperature")
            from flywheel.policies import parse_spec

            parse_spec(policy)  # an unknown backend scheme fails here, before the store is touched
        settings = cfg.policy.model_dump(mode="json") if policy is not None and hasattr(cfg, "policy") else {}
        return cls(problems=n_problems, families=families, seed=cfg.round.seed,
                   difficulty=cfg.round.difficulty, infeasible_share=cfg.round.infeasible_share,
                   api=cfg.round.api, sandbox=cfg.sandbox.model_dump(mode="json"), suite=suite, policy=policy,
                   samples=samples if policy else 1, temperature=temperature if policy else 0.0,
                   policy_settings=settings, problems_file=str(problems_file) if problems_file else None,
                   problems_file_hash=file_hash, backend=cfg.round.backend, address=cfg.round.address)

    def to_json(self) -> dict[str, Any]:
        out = {"problems": self.problems, "families": list(self.families), "seed": self.seed,
               "difficulty": self.difficulty, "infeasible_share": self.infeasible_share, "api": self.api,
               "sandbox": self.sandbox, "suite": self.suite}
        if self.problems_file is not None:
            out |= {"problems_file": self.problems_file, "problems_file_hash": self.problems_file_hash}
        if self.policy is not None:  # reference-only rounds keep the hash they always had
            out |= {"policy": self.policy, "samples": self.samples, "temperature": self.temperature,
                    "policy_settings": self.policy_settings}
        return out

    @property
    def config_hash(self) -> str:
        return content_hash(canonical_json(self.to_json()))

    def item(self, idx: int) -> tuple[str, int, str]:
        """(family, seed, api) of item ``idx``: families round-robin, APIs rotating independently."""
        family = self.families[idx % len(self.families)]
        api = APIS[idx % len(APIS)] if self.api == "rotate" else self.api
        return family, derive_seed(self.seed, idx), api
