"""TOML configuration validated by pydantic. Every default is visible (``flywheel config show``) and an unknown
key is an error that names the file, the key and the nearest valid one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from solvers.config import load_toml, validate
from solvers.errors import ConfigError
from solvers.render import APIS
from solvers.sandbox.program import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoundSection(_Section):
    problems: int = Field(200, gt=0, description="problems to generate")
    families: list[str] = Field(default_factory=list, description="families to draw from; empty = all")
    seed: int = Field(0, ge=0, description="round seed; problem i gets a seed derived from (seed, i)")
    difficulty: int | None = Field(None, ge=1, le=5, description="fixed difficulty; None = drawn per problem")
    infeasible_share: float = Field(0.05, ge=0, le=1, description="share of deliberately infeasible instances")
    api: str = Field("rotate", description="solver API of reference programs, or 'rotate' across all five")
    workers: int | None = Field(None, gt=0, description="parallel workers; None = number of cores")
    backend: Literal["local", "ray"] = Field("local", description="where problems are generated and solved: "
                                             "a local fork pool, or ray (extra `ray`; same records)")
    address: str | None = Field(None, description="ray cluster address; None: RAY_ADDRESS or a local Ray instance")

    @model_serializer(mode="wrap")
    def _placement_when_set(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """Where problems are generated is not what a round is: at their defaults the placement keys are left out
        of the dump (as the sandbox section's), so stores made before they existed still resume."""
        data = handler(self)
        if not (info.context or {}).get("all_defaults"):
            for key in ("backend", "address"):
                if key in data and data[key] == type(self).model_fields[key].default:
                    del data[key]
        return data


class StoreSection(_Section):
    path: str = Field("flywheel-store", description="store directory")


class SandboxSection(_Section):
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="wall-clock limit per program")
    cpu_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="CPU-seconds limit per program")
    memory_mb: int = Field(DEFAULT_MEMORY_MB, gt=0, description="memory cap per program")
    license_file: str | None = Field(None, description="full solver licence file mounted read-only")
    backend: Literal["local", "ray", "server"] = Field("local", description="where programs run: local warm pool, "
                                                       "ray (each node's isolated pool; extra `ray`), or server (a "
                                                       "running `flywheel sandbox serve` at address)")
    address: str | None = Field(None, description="ray cluster address (None: RAY_ADDRESS or a local Ray instance), "
                                "or the server's URL")
    allow_uncapped: bool = Field(False, description="run rounds where the sandbox cannot cap memory and processes "
                                 "(no usable cgroups: see `flywheel sandbox doctor`); off: such a round refuses")

    @model_serializer(mode="wrap")
    def _placement_when_set(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """Where programs run is not what a round is: at their defaults the placement keys are left out of the
        dump that a round's config hash covers, so stores made before they existed still resume. ``show_config``
        asks for every default."""
        data = handler(self)
        if not (info.context or {}).get("all_defaults"):
            for key in ("backend", "address", "allow_uncapped"):
                if key in data and data[key] == type(self).model_fields[key].default:
                    del data[key]
        return data


class PolicySection(_Section):
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key of openai: specs")
    concurrency: int = Field(8, gt=0, description="requests in flight at once (openai:) / batch size (hf:)")
    timeout_s: float = Field(120.0, gt=0, description="per-request timeout")
    max_retries: int = Field(4, ge=0, description="retries per request on 429 / 5xx / timeout / malformed replies")
    backoff_base_s: float = Field(0.5, gt=0, description="first retry delay; doubles per retry, with full jitter")
    backoff_max_s: float = Field(30.0, gt=0, description="cap on one retry delay (also caps Retry-After)")
    max_tokens: int = Field(1024, gt=0, description="completion token limit")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling")
    template: str = Field("formulation_code", description="prompt template of a round")
    label_source: str = Field("self", pattern="^(self|teacher)$", description="'self' or 'teacher'")
    hf_dtype: str = Field("fp32", pattern="^(auto|fp32|bf16)$",
                          description="hf: weights and compute dtype. fp32 by default: bf16 greedy decoding of a "
                                      "fine-tuned SmolLM2 looped to the token limit on 5 of 8 held-out problems "
                                      "where fp32 did on 2 (2.4x faster). auto = bf16 where a measured bf16 GEMM is "
                                      "clearly faster than fp32 here (training.precision), else fp32")
    stop_after_code: bool = Field(True, description="hf: stop a completion once it holds a closed python block "
                                                    "that imports a solver (the program contracts.extract takes)")
    repeat_stop: int = Field(0, ge=0, description="hf: stop a completion once its last N tokens repeat one span of "
                             "at most 64 tokens (a greedy loop bound for max_tokens; finish reason 'repeat'); 0: off. "
                             "bench/repeat_stop.py replays cached completions to show which N changes no program")


class FlywheelConfig(_Section):
    round: RoundSection = Field(default_factory=RoundSection)
    store: StoreSection = Field(default_factory=StoreSection)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    policy: PolicySection = Field(default_factory=PolicySection)


def load_config(path: str | Path | None = None, overrides: dict[str, dict[str, Any]] | None = None) -> FlywheelConfig:
    """Defaults, then the TOML file (if any), then command-line overrides (None values are ignored)."""
    data: dict[str, Any] = load_toml(path) if path else {}
    for section, values in (overrides or {}).items():
        clean = {k: v for k, v in values.items() if v is not None}
        if clean:
            data.setdefault(section, {})
            if not isinstance(data[section], dict):
                raise ConfigError(f"{section!r} must be a table", culprit=str(path))
            data[section] = {**data[section], **clean}
    return validate(FlywheelConfig, data, str(path) if path else "command line")


def show_config(config: BaseModel) -> dict[str, Any]:
    return config.model_dump(mode="json", context={"all_defaults": True})


def fixed_settings() -> dict[str, Any]:
    """What is in force but not set in the TOML: the solver APIs (``solvers.render.APIS``), the tolerances
    (``solvers.ground_truth`` agreement, ``contracts.tolerance`` rules) and the sandbox's own defaults."""
    from contracts.tolerance import RULES
    from flywheel.store.lineage import tolerances

    gt = tolerances()["ground_truth"]
    return {"solver_apis": list(APIS), "tolerance_rules": sorted(RULES), "ground_truth_rtol": gt["rtol"],
            "ground_truth_atol": gt["atol"], "ground_truth_mip_gap": gt["mip_gap"],
            "sandbox_timeout_s": DEFAULT_TIMEOUT_S, "sandbox_memory_mb": DEFAULT_MEMORY_MB}
