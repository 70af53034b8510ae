"""Progressive SFT with general-capability anchoring.

Stages raise the share of OR rows in the mixture (``or_share``; the rest comes from the general sources), one
learning-rate schedule spanning all stages. Before stage 1 the general held-out loss is measured (the anchor); after
each stage it is measured again, and if it has risen by more than ``max_general_rise`` (absolute, in nats/token)
the run stops there, or first rolls the model, optimizer, scheduler and data cursor back to the stage's start
(``action = "rollback"``) so the kept checkpoint is the last one that respected the guard.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from solvers.errors import ConfigError
from training.config import RecipeConfig
from training.trainer import Trainer, _summary, _teardown


def stage_weights(trainer: Trainer, or_share: float, general: list[str]) -> dict[str, float]:
    names = [s.name for s in trainer.sources]
    gen = [n for n in names if n in general]
    ors = [n for n in names if n not in general]
    if not gen or not ors:
        raise ConfigError(f"progressive needs both general sources {general} and OR sources; have {names}",
                          culprit="progressive.general")
    weights = {n: or_share / len(ors) for n in ors}
    weights.update({n: (1 - or_share) / len(gen) for n in gen})
    return weights


def _general_loss(evals: dict[str, float], general: list[str]) -> float:
    values = [v for k, v in evals.items() if k.removeprefix("val_loss/") in general]
    return sum(values) / len(values)


def run_progressive(recipe: RecipeConfig, out: Path, device: str = "cpu", resume: str | None = None,
                    progress: Any = None) -> dict[str, Any]:
    cfg = recipe.progressive
    if not cfg.stages:
        raise ConfigError("progressive recipe has no stages", culprit="progressive.stages")
    trainer = Trainer(recipe, out, device, resume)
    # The anchor is the general loss before stage 1; a resumed run reads it back rather than re-measuring it on
    # an already-trained model (which would silently loosen the guard).
    anchor_file = out / "progressive_anchor.json"
    if resume and anchor_file.is_file():
        anchor = float(json.loads(anchor_file.read_text())["general_val_loss"])
    else:
        anchor = _general_loss(trainer.evaluate(), cfg.general)
        if trainer.world.main:
            anchor_file.write_text(json.dumps({"general_val_loss": anchor}))
    table: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    done = 0
    stopped = ""
    for index, stage in enumerate(cfg.stages):
        stage_end = done + stage.steps
        done = stage_end
        if trainer.step >= stage_end:  # already trained before a resume
            continue
        trainer.mixture.set_weights(stage_weights(trainer, stage.or_share, cfg.general))
        snapshot = _snapshot(trainer) if cfg.action == "rollback" else None
        history += trainer.train(steps=stage_end - trainer.step, progress=progress)
        evals = trainer.evaluate()
        general = _general_loss(evals, cfg.general)
        rise = general - anchor
        row = {"stage": index + 1, "or_share": stage.or_share, "step": trainer.step, "general_val_loss": general,
               "rise": rise, **evals, "kept": rise <= cfg.max_general_rise}
        if trainer.log:
            trainer.log.write({"step": trainer.step, "stage": index + 1, **evals})
        table.append(row)
        if rise > cfg.max_general_rise:
            if snapshot is not None:
                _restore(trainer, snapshot)
                row["rolled_back_to_step"] = trainer.step
            stopped = f"stage {index + 1}: general val loss rose {rise:.3f} > {cfg.max_general_rise}"
            break
    path = trainer.finish()
    summary = _summary(trainer, history, path)
    summary.update({"anchor_general_val_loss": anchor, "stages": table, "stopped": stopped})
    _teardown(trainer)
    return summary


def _snapshot(trainer: Trainer) -> dict[str, Any]:
    return {"model": copy.deepcopy(trainer.model.state_dict()), "optimizer": copy.deepcopy(trainer.optimizer.state_dict()),
            "scheduler": copy.deepcopy(trainer.scheduler.state_dict()), "data": copy.deepcopy(trainer.mixture.state_dict()),
            "step": trainer.step}


def _restore(trainer: Trainer, snap: dict[str, Any]) -> None:
    trainer.model.load_state_dict(snap["model"])
    trainer.optimizer.load_state_dict(snap["optimizer"])
    trainer.scheduler.load_state_dict(snap["scheduler"])
    trainer.mixture.load_state_dict(snap["data"])
    trainer.step = snap["step"]
