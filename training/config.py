"""Training recipes: TOML validated by pydantic.

A recipe is one of the built-in names (``cpt``, ``sft``, ``progressive``: TOML files in ``training/recipes/``) or a
path to a TOML file. Every default is visible in the resolved ``config.json`` a run writes, and an unknown key is an
error that names the file, the key and the nearest valid key (``solvers.config.validate``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solvers.config import load_toml, validate
from solvers.errors import ConfigError, unknown_name

RECIPES_DIR = Path(__file__).parent / "recipes"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSection(_Section):
    arch: str = Field("qwen3_moe_tiny", description="tiny config name (training.models.TINY_CONFIGS), used when path is empty")
    path: str = Field("", description="local HF checkpoint directory to start from; empty = random init from arch")
    overrides: dict[str, Any] = Field(default_factory=dict, description="config fields overriding the tiny config")


class TokenizerSection(_Section):
    path: str = Field("", description="HF tokenizer directory; empty = the model path's, else train a BPE here")
    vocab_size: int = Field(1024, gt=64, description="BPE vocabulary size when training one")


class SourceSection(_Section):
    path: str = Field(..., description="shard directory (train.parquet, val.parquet, manifest.json)")
    name: str = Field("", description="source name (for mixtures and progressive stages); default: dir name")
    weight: float = Field(1.0, ge=0, description="sampling weight of this source's packed rows")


class DataSection(_Section):
    sources: list[SourceSection] = Field(default_factory=list, description="shard directories and weights")
    seq_len: int = Field(128, gt=8, description="packed row length in tokens")
    val_rows: int = Field(16, gt=0, description="held-out packed rows used for val loss (per source)")
    length_groups: int = Field(0, ge=0, description="sort each run of this many rows of an epoch's shuffled order "
                               "by length, so a step's rows carry less padding (HF group_by_length); 0 = off")


class TrainSection(_Section):
    steps: int = Field(100, gt=0, description="optimizer steps")
    batch_rows: int = Field(8, gt=0, description="packed rows per optimizer step (global, across processes)")
    micro_batch: int = Field(8, gt=0, description="rows per forward; accumulation = batch_rows / (micro_batch x N)")
    lr: float = Field(3e-3, gt=0)
    min_lr_ratio: float = Field(0.1, ge=0, le=1, description="the schedule's floor as a fraction of lr")
    warmup_steps: int = Field(10, ge=0)
    schedule: Literal["cosine", "wsd"] = Field(
        "cosine", description="after warm-up: cosine to the floor at the last step, or wsd (warmup-stable-decay): "
        "flat at lr, then linear to the floor over the last `decay_ratio` of the steps after warm-up; a wsd run "
        "saves a checkpoint where its decay starts, so it can be extended from there with one decay at the end")
    decay_ratio: float = Field(0.2, gt=0, le=1, description="wsd: share of the steps after warm-up that decay")
    weight_decay: float = Field(0.1, ge=0)
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = Field(1.0, ge=0, description="max global grad norm; 0 = off")
    dtype: Literal["fp32", "bf16", "auto"] = Field(
        "auto", description="bf16 = autocast (weights and optimizer stay fp32); auto = the faster of the two on this "
        "device by a matmul probe at start-up (recorded in config.json and metrics)")
    activation_checkpointing: bool = False
    compile: bool = Field(False, description="torch.compile each decoder layer (dynamic sequence length); the first step "
                          "pays the compile, later runs on the machine hit inductor's disk cache")
    freeze_layers: int = Field(0, ge=0, description="partial fine-tuning: freeze the lowest N decoder layers (their "
                               "backward is skipped altogether once the embeddings are frozen too); 0 = none")
    freeze_embeddings: bool = Field(False, description="freeze the input embeddings (and an LM head tied to them)")
    seed: int = Field(0, ge=0)
    log_every: int = Field(1, gt=0)
    eval_every: int = Field(25, ge=0, description="val-loss interval in steps; 0 = only at the end")
    save_every: int = Field(0, ge=0, description="checkpoint interval in steps; 0 = only the final one")
    time_budget_s: float = Field(0, ge=0, description="wall-clock budget in seconds from the trainer's start to its "
                                 "last step (0 = off): at the end of warm-up the run is cut to the steps that fit "
                                 "(at most `steps`) and the cosine schedule ends there; the final save comes after")
    min_steps: int = Field(0, ge=0, description="with time_budget_s: the budget never cuts the run below this many "
                           "steps (0 = no floor); a slower machine then runs past the budget rather than stop "
                           "where the run has not yet learnt what it is for")
    init_seed: int | None = Field(None, description="seed of random init; default = seed")
    trim_memory: bool = Field(True, description="CPU: hand the allocator's free pages back to the OS after every step "
                              "(glibc malloc_trim: ~0.1 s, ~5% of a step with the pages faulted back in): rows of "
                              "varying length fragment the heap, and a full-size SFT run's resident memory crept "
                              "from 12 to 17 GB in 145 steps without it")


class LoraSection(_Section):
    r: int = Field(0, ge=0, description="LoRA rank (peft); 0 = full fine-tuning")
    alpha: float = Field(32.0, gt=0, description="LoRA scaling numerator (scale = alpha / r)")
    dropout: float = Field(0.0, ge=0, lt=1)
    targets: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                        "up_proj", "down_proj"],
                               description="module names to adapt (Llama / Qwen names)")


class MoESection(_Section):
    aux_loss_coef: float = Field(0.01, ge=0, description="switch-style load-balancing loss weight (0 = off)")
    bias_update_rate: float = Field(1e-3, ge=0,
                                    description="DeepSeek-V3 aux-loss-free bias step (routers with a correction bias)")


class KernelsSection(_Section):
    table: str = Field("", description="kernel tuning table (flywheel kernels tune); empty = unpatched model")


class StageSection(_Section):
    or_share: float = Field(..., ge=0, le=1, description="share of rows drawn from the OR sources in this stage")
    steps: int = Field(..., gt=0)


class ProgressiveSection(_Section):
    general: list[str] = Field(default_factory=lambda: ["general"], description="source names of general data")
    stages: list[StageSection] = Field(default_factory=list)
    max_general_rise: float = Field(0.15, ge=0, description="allowed rise of general val loss over the stage-0 value")
    action: Literal["stop", "rollback"] = Field("rollback", description="what to do when the guard trips")


class RecipeConfig(_Section):
    name: str = "run"
    kind: Literal["cpt", "sft", "progressive"] = "cpt"
    model: ModelSection = Field(default_factory=ModelSection)
    tokenizer: TokenizerSection = Field(default_factory=TokenizerSection)
    data: DataSection = Field(default_factory=DataSection)
    train: TrainSection = Field(default_factory=TrainSection)
    moe: MoESection = Field(default_factory=MoESection)
    lora: LoraSection = Field(default_factory=LoraSection)
    kernels: KernelsSection = Field(default_factory=KernelsSection)
    progressive: ProgressiveSection = Field(default_factory=ProgressiveSection)

    @model_validator(mode="after")
    def _check(self) -> RecipeConfig:
        if self.train.time_budget_s and self.kind == "progressive":
            raise ValueError("train.time_budget_s is for cpt and sft recipes: a progressive recipe's stages are steps")
        if self.train.min_steps > self.train.steps:
            raise ValueError(f"train.min_steps ({self.train.min_steps}) must not exceed train.steps "
                             f"({self.train.steps})")
        if self.train.batch_rows % self.train.micro_batch:
            raise ValueError(f"train.batch_rows ({self.train.batch_rows}) must be a multiple of train.micro_batch "
                             f"({self.train.micro_batch})")
        return self


def builtin_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.toml"))


def load_recipe(recipe: str, overrides: dict[str, Any] | None = None) -> RecipeConfig:
    """A built-in recipe name or a TOML path, then ``overrides`` (dotted keys -> values, None ignored)."""
    path = Path(recipe)
    if not recipe.endswith(".toml"):
        if recipe not in builtin_recipes():
            raise unknown_name("recipe", recipe, builtin_recipes())
        path = RECIPES_DIR / f"{recipe}.toml"
    data = load_toml(path)
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{part!r} must be a table", culprit=str(path))
        node[leaf] = value
    return validate(RecipeConfig, data, str(path))
