"""The training loop: one process or one rank of an FSDP2 world.

A step: the mixture yields the step's global batch (the same rows on every rank), cut into micro-batches of
``micro_batch`` rows; micro-batch c goes to rank c mod world. Every micro-batch loss is its summed token
cross-entropy divided by the *global* number of target tokens of the step, times the world size (FSDP2 averages
gradients over ranks), so the accumulated gradient is exactly the per-token mean over the whole step whatever the
world size or accumulation: a 2-process run and a 1-process run compute the same step, up to float summation order.

Checkpoints (``checkpoints/step-N/``) are HF folders (safetensors, config, generation config, tokenizer) plus
``trainer_state.pt`` (optimizer, scheduler, data cursor, step) so a resumed run continues the same loss curve;
``final`` is a symlink to the last one. Weights and optimizer state are saved unsharded and keyed by parameter name
(``torch.distributed.checkpoint.state_dict`` full state dicts, for one process as for N), so a checkpoint written by
N FSDP2 ranks resumes on M, and resuming at the same world size repeats the uninterrupted run bit for bit on CPU.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from transformers.utils import logging as hf_logging

from kernels.peak import gemm_shapes
from solvers.errors import ConfigError
from training.card import base_lineage, write_card
from training.config import RecipeConfig
from training.data import IGNORE, Mixture, Packed, Source, corpus_texts, load_source, read_manifest, trim_tail
from training.device import DeviceSpec, World, all_reduce_sum, get_device, init_world, shard_model
from training.flops import (
    active_matmul_params,
    attention_shapes,
    batch_flops,
    device_peak,
    flops_per_token,
    head_matmul_params,
)
from training.logs import MetricsLog, TensorBoardLog, plot_curves, read_metrics
from training.lora import apply_lora, merged_state_dict
from training.models import build_model, compile_layers, enable_activation_checkpointing, freeze_bottom
from training.moe import MoEBalancer, load_summary
from training.precision import probe_dtype
from training.tokenizer import BOS, load_tokenizer, train_tokenizer

STATE_FILE = "trainer_state.pt"

hf_logging.disable_progress_bar()  # save_pretrained's per-shard bar would interleave with the run's own progress


@dataclass
class Schedule:
    """Linear warm-up to 1, then either cosine to ``min_ratio`` at ``total`` or, ``wsd`` (warmup-stable-decay,
    MiniCPM's), 1 until ``decay_start`` and linear to ``min_ratio`` at ``total``; flat after. An object, not a
    closure, so a time-budgeted run can move ``total`` once it knows its step time (``Trainer._plan_budget``).

    Why wsd: a cosine run's weights at step k < total were trained at a learning rate that assumed ``total`` steps,
    so continuing a finished cosine run means raising the rate again (the full demo's round 0 went from 2.2e-5 back
    to 1.05e-4 when extended from 297 to 600 steps). A wsd run's checkpoint at ``decay_start`` is mid-plateau:
    resumed from there with more steps it stays flat and decays once, at the new end."""

    warmup: int
    total: int
    min_ratio: float
    kind: str = "cosine"
    decay_ratio: float = 0.2

    @property
    def decay_start(self) -> int:
        """The step after which the rate falls: wsd's last plateau step (cosine: right after warm-up)."""
        if self.kind != "wsd":
            return self.warmup
        return max(self.warmup, self.total - max(1, round(self.decay_ratio * (self.total - self.warmup))))

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.kind == "wsd":
            start = self.decay_start
            progress = min(1.0, max(0, step - start) / max(1, self.total - start))
            return 1 - (1 - self.min_ratio) * progress
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


DECAY_MARK = "wsd_decay_start"  # the metrics record of the step a wsd run's decay starts at (a checkpoint is saved)


def decay_checkpoint(run: str | Path) -> Path | None:
    """A wsd run's checkpoint at the end of its plateau (``checkpoints/step-K``, K the last step its metrics mark as
    the decay's start), or None: a cosine run, a run stopped before its decay, a checkpoint deleted. Resuming from
    it with more steps extends the run with one decay at the new end, redoing the old decay's steps."""
    marked = [row[DECAY_MARK] for row in read_metrics(Path(run) / "metrics.jsonl") if DECAY_MARK in row]
    path = Path(run) / "checkpoints" / f"step-{marked[-1]}" if marked else None
    return path if path is not None and (path / STATE_FILE).is_file() else None


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint dir itself, or a run dir (its ``final``, else its newest ``checkpoints/step-N``)."""
    p = Path(path)
    if (p / STATE_FILE).is_file():
        return p
    if (p / "final" / STATE_FILE).is_file():
        return (p / "final").resolve()
    steps = sorted((p / "checkpoints").glob("step-*"), key=lambda d: int(d.name.split("-")[1]))
    if steps:
        return steps[-1]
    raise ConfigError("no checkpoint to resume from", culprit=str(path))


@dataclass
class Trainer:
    recipe: RecipeConfig
    out: Path
    device_name: str = "cpu"
    resume: str | None = None
    quiet: bool = False
    world: World = field(init=False)
    device: DeviceSpec = field(init=False)
    step: int = field(init=False, default=0)
    total_steps: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._t0 = time.perf_counter()  # [train] time_budget_s counts from here
        self._first_end: float | None = None  # budget planning: when this process's first step ended, and
        self._steps_here = 0  # how many steps it has taken
        self.planned: dict[str, Any] | None = None  # the budget's plan, once made (kept in trainer_state.pt)
        self.device = get_device(self.device_name)
        self.world = init_world(self.device)
        r = self.recipe
        if r.kind == "progressive":
            self.total_steps = sum(s.steps for s in r.progressive.stages) or r.train.steps
        else:
            self.total_steps = r.train.steps
        chunks = r.train.batch_rows // r.train.micro_batch
        if chunks % self.world.size:
            raise ConfigError(f"batch_rows / micro_batch = {chunks} micro-batches is not divisible by "
                              f"{self.world.size} processes", culprit="train.batch_rows")
        if not r.data.sources:
            raise ConfigError("no data sources (give --data DIR or [[data.sources]])", culprit="data.sources")
        self.out.mkdir(parents=True, exist_ok=True)
        ckpt = resolve_checkpoint(self.resume) if self.resume else None
        self.tokenizer = self._tokenizer(ckpt)
        self.sources: list[Source] = [
            load_source(s.path, s.name, s.weight, self.tokenizer, r.data.seq_len, r.data.val_rows)
            for s in r.data.sources]
        self.mixture = Mixture(self.sources, r.train.seed, length_groups=r.data.length_groups)
        ids = {"bos_token_id": self.tokenizer.convert_tokens_to_ids(BOS), "eos_token_id": self.tokenizer.eos_token_id,
               "pad_token_id": self.tokenizer.pad_token_id}
        # A LoRA run resumes from its base weights plus the checkpoint's adapter/ (the merged copy is for inference).
        from_dir = str(ckpt) if ckpt and r.lora.r == 0 else r.model.path
        self.model = build_model(r.model.arch, from_dir, len(self.tokenizer),
                                 r.model.overrides, r.train.init_seed if r.train.init_seed is not None else r.train.seed,
                                 ids)
        self.model.generation_config.eos_token_id = self.tokenizer.eos_token_id
        self.model.generation_config.pad_token_id = self.tokenizer.pad_token_id
        self.model.to(self.world.device)
        self.flops_per_token = flops_per_token(self.model, r.data.seq_len)
        self._flop_params = (active_matmul_params(self.model), head_matmul_params(self.model))
        # The GEMM shapes of one micro-batch: the CPU MFU peak is measured on them (kernels.peak), never above 100%.
        self.gemm_shapes = tuple(gemm_shapes(self.model, r.train.micro_batch * r.data.seq_len)
                                 + attention_shapes(self.model.config, r.data.seq_len))
        self.dtype_probe: dict[str, Any] | None = None
        self.dtype = r.train.dtype
        if self.dtype == "auto":
            cfg = self.model.config
            self.dtype_probe = probe_dtype(cfg.hidden_size, getattr(cfg, "intermediate_size", 4 * cfg.hidden_size),
                                           r.train.micro_batch * r.data.seq_len, self.world.device.type
                                           if hasattr(self.world.device, "type") else str(self.world.device))
            self.dtype = self.dtype_probe["chosen"]
        self.lora = r.lora.r > 0
        if self.lora:
            self.model = apply_lora(self.model, r.lora, ckpt)
        self._kernels()
        freeze_bottom(self.model, r.train.freeze_layers, r.train.freeze_embeddings)
        if r.train.activation_checkpointing:
            enable_activation_checkpointing(self.model)
        self.model.config.use_cache = False
        self.balancer = MoEBalancer(self.model, r.moe.aux_loss_coef, r.moe.bias_update_rate)
        self.model = shard_model(self.model, self.world)
        if r.train.compile:
            if self.device.name == "cpu" and not any(map(shutil.which, (os.environ.get("CXX", "g++"), "clang++"))):
                raise ConfigError("train.compile needs a C++ compiler for torch inductor on CPU (g++ or clang++, or "
                                  "$CXX); none is on PATH: install one or set compile = false",
                                  culprit="train.compile")
            compile_layers(self.model)
        self._select_head_inputs()
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        decay = [p for p in trainable if p.dim() >= 2]
        no_decay = [p for p in trainable if p.dim() < 2]
        # Fused AdamW (one kernel over all parameters instead of ~10 small ops per tensor) where torch has it for
        # plain tensors; FSDP2's sharded DTensors and the NPU keep the default implementation.
        fused = not self.world.distributed and self.device.name in ("cpu", "cuda")
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": r.train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=r.train.lr, betas=r.train.betas, eps=1e-8, fused=fused or None)
        self.schedule = Schedule(r.train.warmup_steps, self.total_steps, r.train.min_lr_ratio, r.train.schedule,
                                 r.train.decay_ratio)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.schedule)
        if ckpt:
            self._load_state(ckpt)
        # MFU divides by the peak of the dtype the GEMMs really run in: a tuned table may compute them in fp32 under
        # bf16 autocast (on CPUs without bf16 matrix units); with several dtypes, the highest peak (never flattering).
        self.peak_flops, self.peak_source = max(device_peak(self.device.name, getattr(torch, d), self.gemm_shapes)
                                                for d in sorted(self.gemm_dtypes))
        self.log = MetricsLog(self.out / "metrics.jsonl", self.step if ckpt else None) if self.world.main else None
        self.tb = TensorBoardLog(self.out / "tensorboard", self.step if ckpt else 0) if self.world.main else None
        if self.world.main:
            self._write_config()

    # ---- setup helpers -------------------------------------------------------------------------------------------
    def _tokenizer(self, ckpt: Path | None):  # noqa: ANN202
        r = self.recipe
        for candidate in (str(ckpt) if ckpt else "", r.tokenizer.path, r.model.path):
            if candidate and (Path(candidate) / "tokenizer.json").is_file():
                return load_tokenizer(candidate)
        if r.tokenizer.path:
            raise ConfigError("no tokenizer.json in the tokenizer directory", culprit=r.tokenizer.path)
        tok_dir = self.out / "tokenizer"
        if self.world.main:
            train_tokenizer(corpus_texts([s.path for s in r.data.sources]), r.tokenizer.vocab_size).save_pretrained(
                tok_dir)
        if self.world.distributed:
            torch.distributed.barrier()
        return load_tokenizer(tok_dir)

    def _kernels(self) -> None:
        """Patch the model from a kernel tuning table (``kernels.apply``) before sharding."""
        table = self.recipe.kernels.table
        run_dtype = "bfloat16" if self.dtype == "bf16" else "float32"
        self.gemm_dtypes = {run_dtype}
        self.fused_ce = False  # the model computes its own loss through a fused linear cross-entropy backend
        if not table:
            return
        from kernels import apply
        from kernels.patch import gemm_dtypes

        patched = apply(self.model, table=table, device=self.device.name)
        # A table whose cross-entropy entry is ``reference`` leaves the LM head alone: then the trainer's own
        # head-on-target-positions path applies (it used to be skipped whenever a table was given, so such a table
        # computed the full-vocabulary logits of every prompt position).
        self.fused_ce = patched.get("fused_linear_cross_entropy", 0) > 0
        self.gemm_dtypes = gemm_dtypes(table, self.device.name, run_dtype)
        if self.world.main and not self.quiet:
            print(f"kernels: patched {patched} from {table}")

    def _write_config(self) -> None:
        info = {"recipe": self.recipe.model_dump(mode="json"), "device": self.device.name, "world": self.world.size,
                "flops_per_token": self.flops_per_token, "peak_flops": self.peak_flops,
                "peak_source": self.peak_source, "gemm_dtypes": sorted(self.gemm_dtypes),
                "params": sum(p.numel() for p in self._raw().parameters()),
                "vocab_size": len(self.tokenizer), "model_class": type(self._raw()).__name__,
                "train_rows": {s.name: len(s.train) for s in self.sources},
                "sft_truncated": {s.name: s.train.truncated for s in self.sources},
                "dtype": self.dtype, "dtype_probe": self.dtype_probe,
                "trainable_params": sum(p.numel() for p in self.model.parameters() if p.requires_grad)}
        (self.out / "config.json").write_text(json.dumps(info, indent=2))

    def _raw(self) -> torch.nn.Module:
        return self.model

    # ---- the step ------------------------------------------------------------------------------------------------
    def _autocast(self):  # noqa: ANN202
        if self.dtype == "bf16":
            return torch.autocast(self.device.name, dtype=torch.bfloat16)
        return nullcontext()

    def _ce_sum(self, batch: Packed) -> tuple[torch.Tensor, int]:
        dev = self.world.device
        if self.fused_ce:
            # Patched model (kernels.apply): the loss comes from the model, so a fused linear cross-entropy never
            # materialises the logits. HF semantics: shift_labels used as given, num_items_in_batch=1 -> a sum.
            labels = batch.labels.to(dev)
            with self._autocast():
                out = self.model(input_ids=batch.input_ids.to(dev), position_ids=batch.position_ids.to(dev),
                                 attention_mask=None, use_cache=False, labels=labels, shift_labels=labels,
                                 num_items_in_batch=1)
            return out.loss.float(), int((labels != IGNORE).sum())
        labels = batch.labels.to(dev)
        keep = labels != IGNORE
        # The LM head runs on the target positions only (the hook below): in SFT most of a packed row is prompt,
        # and the full-vocabulary fp32 logits of every position were the step's largest cost after the GEMMs.
        self._head_keep = keep if self._head_hook is not None else None
        try:
            with self._autocast():
                out = self.model(input_ids=batch.input_ids.to(dev), position_ids=batch.position_ids.to(dev),
                                 attention_mask=None, use_cache=False)
        finally:
            self._head_keep = None
        logits = out.logits.float()
        target = labels[keep] if logits.dim() == 2 else labels.view(-1)  # 2-d: the head saw target positions only
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), target, ignore_index=IGNORE, reduction="sum")
        return loss, int(keep.sum())

    def _select_head_inputs(self) -> None:
        """A forward pre-hook on the output embeddings that keeps only the hidden states of target positions
        (``self._head_keep``, set around one forward): every HF causal LM ends ``logits = lm_head(hidden)`` (then
        element-wise scaling / soft-capping at most), so the loss is the same sum while the head's GEMM, the fp32
        logits and their softmax shrink to the target tokens. Called on the (possibly FSDP2- or peft-wrapped)
        model's head, so sharding hooks still run."""
        self._head_keep: torch.Tensor | None = None
        self._head_hook = None
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if head is None or self.fused_ce:
            return

        def keep_targets(_module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
            if self._head_keep is None or not args or args[0].shape[:2] != self._head_keep.shape:
                return None
            return (args[0][self._head_keep], *args[1:])

        self._head_hook = head.register_forward_pre_hook(keep_targets)

    def train_step(self) -> dict[str, Any]:
        r = self.recipe.train
        t0 = time.perf_counter()
        batch = self.mixture.next_batch(self.step, r.batch_rows)
        global_tokens = max(1, int((batch.labels != IGNORE).sum()))
        n_chunks = r.batch_rows // r.micro_batch
        mine = [c for c in range(n_chunks) if c % self.world.size == self.world.rank]
        self.model.train()
        ce_total, aux_total, flops, computed = 0.0, 0.0, 0.0, 0
        for c in mine:
            sl = slice(c * r.micro_batch, (c + 1) * r.micro_batch)
            micro = trim_tail(Packed(batch.input_ids[sl], batch.position_ids[sl], batch.labels[sl]))
            rows, length = micro.input_ids.shape
            computed += rows * length
            flops += batch_flops(self.model, rows, length, int((micro.labels != IGNORE).sum())
                                 if self._head_hook is not None else None, self._flop_params)
            self.balancer.recording = True
            ce, _ = self._ce_sum(micro)
            loss = ce * self.world.size / global_tokens
            aux = self.balancer.aux_loss()
            if aux is not None:
                loss = loss + aux * self.world.size / n_chunks
                aux_total += float(aux.detach()) / n_chunks
            self.balancer.recording = False
            loss.backward()
            ce_total += float(ce.detach())
        grad_norm = self._clip(r.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        if r.trim_memory:  # inside the step's time: its cost is the step's
            self.device.release_free_memory()
        loads = self.balancer.end_step(self.world.distributed)
        self.step += 1
        ce_total, aux_total, flops, computed = all_reduce_sum([ce_total, aux_total, flops, float(computed)], self.world)
        self.device.synchronize()
        dt = time.perf_counter() - t0
        tokens = r.batch_rows * self.recipe.data.seq_len
        record = {"step": self.step, "loss": ce_total / global_tokens, "lr": self.scheduler.get_last_lr()[0],
                  "grad_norm": grad_norm, "tokens": tokens, "target_tokens": global_tokens,
                  "computed_tokens": int(computed), "step_s": dt, "tokens_per_s": tokens / dt,
                  "target_tokens_per_s": global_tokens / dt,
                  # the FLOPs of the rows as computed (training/flops.py): trimmed tails and the head's skipped
                  # prompt positions are not counted, so MFU never credits work that was not done
                  "mfu": flops / dt / (self.peak_flops * self.world.size),
                  "memory_mb": self.device.peak_memory_mb()}
        if self.balancer.active:
            record["aux_loss"] = aux_total
            record.update(load_summary(loads))
            record["expert_load"] = {k: [round(x, 4) for x in v] for k, v in loads.items()}
        return record

    def _clip(self, max_norm: float) -> float:
        params = [p for p in self.model.parameters() if p.grad is not None]
        if not params:
            return 0.0
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else float("inf"))
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        return float(norm)

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Token-mean cross-entropy on each source's held-out rows (``val_loss/<source>``)."""
        self.model.eval()
        self.balancer.recording = False
        result: dict[str, float] = {}
        mb = self.recipe.train.micro_batch
        for src in self.sources:
            if src.val is None:
                continue
            total, count = 0.0, 0
            for i in range(0, len(src.val), mb):
                part = trim_tail(Packed(src.val.input_ids[i:i + mb], src.val.position_ids[i:i + mb],
                                        src.val.labels[i:i + mb]))
                # A compiled decoder runs eager here: a few no-grad batches are not worth a second compile.
                with torch.compiler.set_stance("force_eager"):
                    ce, n = self._ce_sum(part)
                total, count = total + float(ce), count + n
            result[f"val_loss/{src.name}"] = total / max(1, count)
        self.balancer.stats = {}
        self.balancer.recording = True
        self.model.train()
        return result

    # ---- the run -------------------------------------------------------------------------------------------------
    def train(self, steps: int | None = None, progress: Any = None) -> list[dict[str, Any]]:
        """Run ``steps`` more optimizer steps (default: up to the recipe's total), logging, evaluating, saving."""
        r = self.recipe.train
        end = self.total_steps if steps is None else min(self.total_steps, self.step + steps)
        history: list[dict[str, Any]] = []
        while self.step < min(end, self.total_steps):
            record = self.train_step()
            if r.time_budget_s:
                record.update(self._plan_budget())
            if r.eval_every and self.step % r.eval_every == 0 or self.step == self.total_steps:
                record.update(self.evaluate())
            history.append(record)
            if self.step == 1 and self.dtype_probe is not None:
                record["dtype_probe"] = self.dtype_probe
            if r.schedule == "wsd" and self.step == self.schedule.decay_start < self.total_steps:
                record[DECAY_MARK] = self.step
            if self.log and (self.step % r.log_every == 0 or DECAY_MARK in record
                             or any(k.startswith("val_loss") for k in record)):
                self.log.write(record)
                if self.tb:
                    self.tb.write(record)
            if progress is not None:
                progress(record)
            if r.save_every and self.step % r.save_every == 0 and self.step != self.total_steps:
                self.save()
            elif DECAY_MARK in record:
                self.save()  # the plateau's end: an extension resumes here (``decay_checkpoint``)
        return history

    def _plan_budget(self) -> dict[str, Any]:
        """``[train] time_budget_s``: at the end of warm-up (at least 3 steps), cut the run to the steps that fit the
        budget at the mean time of this process's steps after its first (which pays compile and warm-up), and end
        the cosine there, so a slower machine trains fewer steps and a faster one all of ``steps``, each with a
        full schedule. After that, a step that would end past the budget is not taken (the machine slowed): the
        run ends early, its schedule unfinished. ``min_steps`` is a floor under both cuts: a machine too slow for
        it runs past the budget (the plan records the steps that would have fit, ``fit_steps``). Returns what the
        step's record gets (the plan, once)."""
        r = self.recipe.train
        now = time.perf_counter()
        self._steps_here += 1
        if self._first_end is None:
            self._first_end = now
        # the mean of this process's steps after its first (their gaps telescope), never its first step alone
        per_step = (now - self._first_end) / (self._steps_here - 1) if self._steps_here > 1 else now - self._t0
        # every rank must take the same decision (or the collectives of the next step hang): the ranks' mean
        per_step, elapsed = (x / self.world.size for x in all_reduce_sum([per_step, now - self._t0], self.world))
        left = r.time_budget_s - elapsed
        if self.planned is None and self.step >= max(3, r.warmup_steps):
            fit = max(self.step, min(self.total_steps, self.step + int(left // per_step)))
            total = max(fit, min(self.total_steps, r.min_steps))
            self.planned = {"total_steps": total, "step_s": round(per_step, 3), "at_step": self.step,
                            "budget_s": r.time_budget_s}
            if total > fit:
                self.planned |= {"fit_steps": fit, "min_steps": r.min_steps}
            self._set_total(total)
            return {"budget_plan": dict(self.planned)}
        if self.planned is not None and r.min_steps <= self.step < self.total_steps and left < per_step:
            self.planned["stopped_at"] = self.step
            self._set_total(self.step)
            return {"budget_stop": self.step}
        return {}

    def _set_total(self, total: int) -> None:
        self.total_steps = total
        self.schedule.total = total

    def finish(self) -> Path:
        """Save the final checkpoint, point ``final`` at it, draw the curves; returns the checkpoint path."""
        path = self.save()
        if self.world.main:
            final = self.out / "final"
            if final.is_symlink() or final.exists():
                final.unlink()
            final.symlink_to(path.relative_to(self.out), target_is_directory=True)
            plot_curves(self.out / "metrics.jsonl", self.out / "curves.png", self.recipe.name)
            if self.tb:
                self.tb.close()
        return path

    # ---- checkpoints ---------------------------------------------------------------------------------------------
    def save(self) -> Path:
        """Write ``checkpoints/step-N``; every rank takes part (FSDP2 gathers the full state), rank 0 writes."""
        path = self.out / "checkpoints" / f"step-{self.step}"
        model_sd, optim_sd = self._full_state()
        if self.world.main:
            path.mkdir(parents=True, exist_ok=True)
            if self.lora:
                # The merged weights as a plain HF checkpoint (loads with AutoModelForCausalLM, hf:, vLLM), and the
                # adapters beside it in adapter/ (peft's format) for loaders that apply LoRA themselves.
                base = self.model.get_base_model()
                base.save_pretrained(path, state_dict=merged_state_dict(self.model), safe_serialization=True)
                self.model.save_pretrained(path / "adapter")
            else:
                self._raw().save_pretrained(path, state_dict=model_sd, safe_serialization=True)
            self.tokenizer.save_pretrained(path)
            self._card(path)
            torch.save({"step": self.step, "optimizer": optim_sd, "scheduler": self.scheduler.state_dict(),
                        "data": self.mixture.state_dict(), "recipe": self.recipe.model_dump(mode="json"),
                        "world": self.world.size, "budget_plan": self.planned}, path / STATE_FILE)
        if self.world.distributed:
            torch.distributed.barrier()
        return path

    def _card(self, path: Path) -> None:
        r = self.recipe
        base = base_lineage(r.model.path) if r.model.path else {}
        data = [{"path": s.path, "name": s.name, "weight": s.weight, "manifest": read_manifest(s.path)}
                for s in self.sources]
        recipe = {"name": r.name, "kind": r.kind, "init": r.model.path or f"random ({r.model.arch})",
                  "steps": self.step, "total_steps": self.total_steps, "lr": r.train.lr,
                  "batch_rows": r.train.batch_rows, "seq_len": r.data.seq_len, "dtype": self.dtype,
                  "lora": {"r": r.lora.r, "alpha": r.lora.alpha, "targets": list(r.lora.targets)} if self.lora else None}
        last = read_metrics(self.out / "metrics.jsonl")
        metrics: dict[str, Any] = {"step": self.step}
        for row in last:
            metrics.update({k: v for k, v in row.items() if k in ("loss", "tokens_per_s", "mfu") or
                            k.startswith("val_loss")})
        write_card(path, base=base, data=data, recipe={k: v for k, v in recipe.items() if v is not None},
                   metrics=metrics, title=f"{r.name} step {self.step}")

    def _full_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Unsharded model and optimizer state dicts, keyed by parameter name whatever the world size.

        ``get_*_state_dict`` with ``full_state_dict`` all-gathers FSDP2's DTensor shards (a collective: every rank
        calls it) and, with ``cpu_offload``, keeps the result on rank 0 only (other ranks get empty dicts). The same
        helpers on an unsharded model give the same format, so a checkpoint from N processes resumes in M.
        """
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return (get_model_state_dict(self.model, options=opts),
                get_optimizer_state_dict(self.model, self.optimizer, options=opts))

    def _load_state(self, ckpt: Path) -> None:
        """Optimizer, scheduler, data cursor and step from ``trainer_state.pt`` (the weights came with the model).

        Every rank reads the full, name-keyed optimizer state; ``set_optimizer_state_dict`` keeps each rank's shard
        of it (on one process it is a plain load by name).
        """
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        state = torch.load(ckpt / STATE_FILE, map_location="cpu", weights_only=False)
        optim = state["optimizer"]
        if any(isinstance(k, int) for k in optim["state"]):
            # Written by a 1-process run before checkpoints were name-keyed: indices only mean something to an
            # optimizer over the same unsharded parameters.
            if self.world.distributed:
                raise ConfigError("this checkpoint's optimizer state is keyed by parameter index (an older "
                                  "1-process checkpoint): resume it with one process", culprit=str(ckpt))
            self.optimizer.load_state_dict(optim)
        else:
            set_optimizer_state_dict(self.model, self.optimizer, optim, options=StateDictOptions(full_state_dict=True))
        self.scheduler.load_state_dict(state["scheduler"])
        # LambdaLR restores the Schedule's fields too: the recipe's own (a resumed run may be given more steps)
        # win, then a budget's plan, which the resumed run keeps (the budget counts this process's time again).
        self.schedule.warmup, self.schedule.total = self.recipe.train.warmup_steps, self.total_steps
        self.schedule.min_ratio = self.recipe.train.min_lr_ratio
        self.schedule.kind, self.schedule.decay_ratio = self.recipe.train.schedule, self.recipe.train.decay_ratio
        self.planned = state.get("budget_plan")
        if self.planned and self.recipe.train.time_budget_s:
            self._set_total(min(self.total_steps, self.planned["total_steps"]))
        self.mixture.load_state_dict(state["data"])
        self.step = int(state["step"])


def run(recipe: RecipeConfig, out: Path, device: str = "cpu", resume: str | None = None,
        progress: Any = None) -> dict[str, Any]:
    """Train a cpt/sft recipe to the end; returns a summary (final losses, checkpoint, throughput)."""
    trainer = Trainer(recipe, out, device, resume)
    history = trainer.train(progress=progress)
    path = trainer.finish()
    summary = _summary(trainer, history, path)
    _teardown(trainer)
    return summary


def _summary(trainer: Trainer, history: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    steady = history[1:] or history  # the first step pays one-off allocation and warm-up costs
    out: dict[str, Any] = {"run": str(trainer.out), "checkpoint": str(path), "steps": trainer.step}
    if trainer.planned:
        out["budget_plan"] = trainer.planned
    if history:
        out["final_loss"] = history[-1]["loss"]
        out.update({k: v for k, v in history[-1].items() if k.startswith("val_loss")})
        out["tokens_per_s"] = sorted(r["tokens_per_s"] for r in steady)[len(steady) // 2]
        out["mfu"] = sorted(r["mfu"] for r in steady)[len(steady) // 2]
        out["memory_mb"] = max(r["memory_mb"] for r in history)
    return out


def _teardown(trainer: Trainer) -> None:
    trainer.balancer.remove()
    if trainer.world.distributed and torch.distributed.is_initialized() and os.environ.get("FLYWHEEL_KEEP_PG") != "1":
        torch.distributed.destroy_process_group()
