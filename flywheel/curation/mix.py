"""Mixture weights and the train/validation split.

A mix file (TOML) scales how often samples of a source, family, difficulty or policy appear in the training split::

    seed = 0                 # the Generator that draws fractional repeats
    validation = 0.05        # share of clusters held out
    [weights.family]
    diet = 2.0               # every diet sample twice
    transportation = 0.5     # half of them (drawn)
    [weights.difficulty]
    "1" = 0.0                # none
    [weights.measured_level] # the measured difficulty (size, techniques, solve time), not the knob
    "5" = 2.0
    [weights.source]         # label_source: generator | benchmark | teacher | self
    teacher = 1.5

A sample's weight is the product of its weights along each axis (1.0 where not named). Weight w gives floor(w)
copies plus one more with probability w - floor(w). Weights apply to the training split only; the validation split
keeps one representative per cluster, so it measures the data distribution rather than the recipe.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from solvers.config import load_toml, validate
from solvers.errors import ConfigError

AXES = ("source", "family", "difficulty", "measured_level", "policy")


class MixWeights(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: dict[str, float] = Field(default_factory=dict)
    family: dict[str, float] = Field(default_factory=dict)
    difficulty: dict[str, float] = Field(default_factory=dict)
    # The measured level (1..5 from size, techniques and solve time; the problems table's measured_level).
    measured_level: dict[str, float] = Field(default_factory=dict)
    policy: dict[str, float] = Field(default_factory=dict)


class MixSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = Field(0, ge=0, description="seed of the Generator drawing fractional repeats")
    validation: float = Field(0.05, ge=0, lt=1, description="share of clusters held out for validation")
    weights: MixWeights = Field(default_factory=MixWeights)


def load_mix(path: str | Path | None) -> MixSpec:
    """The mix file at ``path`` (defaults when None); an unknown key names the file and the nearest valid key."""
    if path is None:
        return MixSpec()
    spec = validate(MixSpec, load_toml(path), str(path))
    for axis in AXES:
        for key, w in getattr(spec.weights, axis).items():
            if not math.isfinite(w) or w < 0:
                raise ConfigError(f"weights.{axis}.{key} must be a finite number >= 0", culprit=str(path))
    return spec


def weight_of(row: Mapping[str, Any], weights: MixWeights) -> float:
    w = 1.0
    for axis in AXES:
        table = getattr(weights, axis)
        if table:
            w *= table.get(str(row.get(axis)), 1.0)
    return w


def repeats(rows: Sequence[Mapping[str, Any]], weights: MixWeights, rng: np.random.Generator) -> list[int]:
    """How many copies of each row the training split gets under ``weights``."""
    out = []
    for row in rows:
        w = weight_of(row, weights)
        whole = math.floor(w)
        out.append(whole + int(rng.random() < w - whole))
    return out


def is_validation(split_key: str, share: float, seed: int) -> bool:
    """Deterministic per-cluster split: a keyed hash of the cluster's split key, compared with ``share``."""
    h = int(hashlib.sha256(f"{seed}:{split_key}".encode()).hexdigest()[:12], 16)
    return h / float(1 << 48) < share


def split_clusters(split_keys: Sequence[str], share: float, seed: int) -> list[bool]:
    """Validation flags per cluster. With at least two clusters and ``share > 0`` validation is never empty: the
    cluster with the smallest hash goes there if the hash rule picked none."""
    flags = [is_validation(k, share, seed) for k in split_keys]
    if share > 0 and len(split_keys) >= 2 and not any(flags):
        scores = [hashlib.sha256(f"{seed}:{k}".encode()).hexdigest() for k in split_keys]
        flags[min(range(len(scores)), key=scores.__getitem__)] = True
    if len(split_keys) >= 2 and all(flags):
        flags[0] = False
    return flags
