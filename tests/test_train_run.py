"""End-to-end trainer runs on shards in the export format: CPT then SFT, HF checkpoints, resume, FSDP2, progressive.

Everything is tiny (2 layers, hidden 64, 4 experts, rows of 128-384 tokens) so the module fits in a few CPU minutes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from flywheel.curation.synthetic import write_problem_shards, write_text_shard
from training.config import load_recipe
from training.progressive import run_progressive
from training.trainer import Schedule, Trainer, decay_checkpoint, run

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("shards")
    cpt, sft = write_problem_shards(base, n_train=40, n_val=8, seed=11)
    import training.data as data_mod

    texts = [inspect.getsource(m) for m in (json, shutil, subprocess, data_mod)]
    paragraphs = [p for t in texts for p in t.split("\n\n") if len(p) > 200][:80]
    general = write_text_shard(base / "general", paragraphs, n_val=10)
    return {"cpt": cpt, "sft": sft, "general": general}


def _recipe(kind: str, sources: list[dict], **train):
    # dtype pinned: "auto" times a GEMM probe at start-up, and on a loaded machine two runs that a test compares
    # loss for loss could choose differently (the probe has its own tests).
    base = {"train.steps": 20, "train.batch_rows": 8, "train.micro_batch": 8, "train.warmup_steps": 2,
            "train.eval_every": 0, "data.seq_len": 128, "tokenizer.vocab_size": 512, "data.val_rows": 8,
            "train.dtype": "fp32"}
    base.update({f"train.{k}": v for k, v in train.items() if not k.startswith("_")})
    base["data.sources"] = sources
    base.update(train.get("_extra", {}))
    return load_recipe(kind, base)


@pytest.fixture(scope="module")
def cpt_run(shards, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("cpt")
    trainer = Trainer(_recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], lr=3e-3, steps=16, save_every=8), out)
    before = trainer.evaluate()["val_loss/cpt"]
    trainer.train()
    trainer.finish()
    after = trainer.evaluate()["val_loss/cpt"]
    trainer.balancer.remove()
    return {"out": out, "before": before, "after": after}


def test_cpt_then_sft_lowers_held_out_loss(cpt_run, shards, tmp_path) -> None:
    # 16 steps of lr 3e-3 on a tiny model move val loss from ~ln(512)=6.2 by far more than run-to-run noise.
    assert cpt_run["after"] < cpt_run["before"] - 0.5
    out = cpt_run["out"]
    assert (out / "final").resolve() == (out / "checkpoints" / "step-16").resolve()
    assert (out / "curves.png").stat().st_size > 10_000
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 17))
    assert all(r["tokens_per_s"] > 0 and 0 < r["mfu"] < 1 and r["memory_mb"] > 0 for r in rows)
    assert all(len(v) == 4 for v in rows[-1]["expert_load"].values())  # per-expert load of every MoE router

    recipe = _recipe("sft", [{"path": str(shards["sft"]), "name": "sft"}], steps=12, lr=1e-3, batch_rows=4,
                     micro_batch=4, _extra={"model.path": str(out / "final"), "data.seq_len": 384})
    sft = Trainer(recipe, tmp_path / "sft")
    before = sft.evaluate()["val_loss/sft"]
    sft.train()
    sft.finish()
    after = sft.evaluate()["val_loss/sft"]
    # Prompt tokens carry no loss, so the assistant answers (templated, number-copying) must get cheaper.
    assert after < before - 0.2, (before, after)


def test_checkpoint_loads_with_transformers_and_generates(cpt_run) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    final = cpt_run["out"] / "final"
    model = AutoModelForCausalLM.from_pretrained(final)
    tok = AutoTokenizer.from_pretrained(final)
    assert type(model).__name__ == "Qwen3MoeForCausalLM"
    ids = tok.apply_chat_template([{"role": "user", "content": "Maximise profit of 3 chairs."}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
    gen = model.generate(ids, max_new_tokens=8, do_sample=False)
    assert gen.shape[1] > ids.shape[1]
    assert isinstance(tok.decode(gen[0, ids.shape[1]:]), str)

    # The same folder through the policy layer the next flywheel round uses (``hf:PATH``).
    from flywheel.policies.backends.base import ChatRequest, Completion, make_backend

    backend = make_backend(f"hf:{final}")
    got: list = []
    request = ChatRequest(key="k", messages=({"role": "user", "content": "Minimise cost of 12 trucks."},),
                          temperature=0.0, top_p=1.0, max_tokens=8, seed=0)
    asyncio.run(backend.run([request], lambda req, outcome: got.append(outcome)))
    assert len(got) == 1 and isinstance(got[0], Completion), got


def test_resume_reproduces_the_uninterrupted_loss_curve(shards, tmp_path) -> None:
    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=4, save_every=2,
                     _extra={"model.arch": "deepseek_v3_tiny"})
    full = run(recipe, tmp_path / "full")
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(tmp_path / "full", resumed_dir, symlinks=True)
    shutil.rmtree(resumed_dir / "checkpoints" / "step-4")
    run(recipe, resumed_dir, resume=str(resumed_dir / "checkpoints" / "step-2"))

    def losses(d: Path) -> list[float]:
        return [json.loads(x)["loss"] for x in (d / "metrics.jsonl").read_text().splitlines()]

    # CPU fp32, same data cursor, optimizer, scheduler and router bias: bit-identical, no tolerance.
    assert losses(resumed_dir) == losses(tmp_path / "full")
    assert len(losses(resumed_dir)) == 4
    assert full["steps"] == 4
    # DeepSeek-V3 aux-loss-free balancing: the trainer moved the router bias (transformers never does) by exactly
    # rate x sign(mean load - load) per step, from the loads it logged. (The net bias alone can be zero: steps
    # with opposite imbalances cancel.)
    weights = load_file(tmp_path / "full" / "final" / "model.safetensors")
    bias = {k.removesuffix(".e_score_correction_bias"): v for k, v in weights.items()
            if k.endswith("e_score_correction_bias")}
    rows = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert bias
    moved = False
    for router, b in bias.items():
        expected = torch.zeros_like(b)
        for r in rows:
            share = torch.tensor(r["expert_load"][router])
            delta = 1e-3 * torch.sign(1 / len(share) - share)  # the recipe's default bias_update_rate
            moved = moved or bool(delta.abs().sum() > 0)
            expected += delta
        assert torch.allclose(b, expected, atol=1e-6), (b, expected)  # fp32 sums of +-1e-3: exact to ~1e-9
    assert moved


def test_fsdp2_two_processes_match_one_process(cpt_run, shards, tmp_path) -> None:
    tok = str(cpt_run["out"] / "tokenizer")
    sets = ["train.dtype=fp32", "train.steps=2", "train.batch_rows=8", "train.micro_batch=4", "data.seq_len=128", "train.eval_every=0",
            "train.warmup_steps=2", "data.val_rows=8", f'tokenizer.path="{tok}"']
    single = run(_recipe("cpt", [{"path": str(shards["cpt"])}], steps=2, micro_batch=4,
                         _extra={"tokenizer.path": tok}), tmp_path / "one")
    cmd = [sys.executable, "-m", "flywheel.cli", "train", "--recipe", "cpt", "--data", str(shards["cpt"]),
           "--nproc", "2", "--out", str(tmp_path / "two"), "--format", "json"]
    for s in sets:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = [json.loads(x)["loss"] for x in (tmp_path / "one" / "metrics.jsonl").read_text().splitlines()]
    two = [json.loads(x)["loss"] for x in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert len(two) == 2
    # Same micro-batches and per-token normalisation on both sides; only fp32 summation order differs
    # (gradient reduce-scatter across ranks vs local accumulation), which moves losses by ~1e-7 relative.
    assert two == pytest.approx(one, rel=1e-5)
    config = json.loads((tmp_path / "two" / "config.json").read_text())
    assert config["world"] == 2
    assert single["steps"] == 2


def test_progressive_guard_rolls_back_when_general_loss_rises(cpt_run, shards, tmp_path) -> None:
    tok = str(cpt_run["out"] / "tokenizer")
    sources = [{"path": str(shards["cpt"]), "name": "or"}, {"path": str(shards["general"]), "name": "general"}]
    kept = run_progressive(_recipe("progressive", sources, warmup_steps=0, _extra={
        "tokenizer.path": tok, "progressive.stages": [{"or_share": 0.5, "steps": 3}, {"or_share": 0.75, "steps": 3}],
        "progressive.max_general_rise": 100.0}), tmp_path / "kept")
    assert [s["stage"] for s in kept["stages"]] == [1, 2] and kept["steps"] == 6 and not kept["stopped"]
    # An OR-only stage at a destabilising learning rate must raise general loss; the guard rolls it back.
    tripped = run_progressive(_recipe("progressive", sources, warmup_steps=0, lr=0.3, _extra={
        "tokenizer.path": tok, "progressive.stages": [{"or_share": 1.0, "steps": 3}, {"or_share": 1.0, "steps": 3}],
        "progressive.max_general_rise": 0.0}), tmp_path / "tripped")
    assert tripped["stopped"].startswith("stage 1")
    assert tripped["stages"][0]["rolled_back_to_step"] == 0 and tripped["steps"] == 0
    assert torch.load(tmp_path / "tripped" / "final" / "trainer_state.pt", weights_only=False)["step"] == 0


def test_head_runs_on_target_positions_only_and_keeps_loss_and_gradients(shards, tmp_path) -> None:
    """The LM head's pre-hook feeds it the target positions only; loss and every gradient equal the full-logits path."""
    trainer = Trainer(_recipe("sft", [{"path": str(shards["sft"]), "name": "sft"}], steps=1,
                              _extra={"data.seq_len": 384}), tmp_path / "t")
    batch = trainer.mixture.next_batch(0, 4)
    keep = batch.labels != -100
    assert 0 < int(keep.sum()) < keep.numel()  # SFT: prompt tokens carry no loss
    seen: list[tuple[int, ...]] = []
    probe = trainer.model.get_output_embeddings().register_forward_hook(lambda m, a, o: seen.append(tuple(o.shape)))

    def loss_and_grads() -> tuple[float, dict[str, torch.Tensor]]:
        trainer.model.zero_grad(set_to_none=True)
        ce, n = trainer._ce_sum(batch)
        assert n == int(keep.sum())
        ce.backward()
        return float(ce), {k: p.grad.clone() for k, p in trainer.model.named_parameters() if p.grad is not None}

    selected, g_sel = loss_and_grads()
    assert seen[-1][:-1] == (int(keep.sum()),)  # the head saw N target rows, not B x T positions
    trainer._head_hook.remove()
    trainer._head_hook = None
    full, g_full = loss_and_grads()
    assert seen[-1][:-1] == tuple(keep.shape)
    probe.remove()
    trainer.balancer.remove()
    # fp32 both ways; the gathered rows go through the same GEMM, only its blocking over M may differ (~1e-7 rel).
    assert selected == pytest.approx(full, rel=1e-5)
    assert g_sel.keys() == g_full.keys()
    for k in g_full:
        assert torch.allclose(g_sel[k], g_full[k], rtol=1e-4, atol=1e-6), k


def test_a_table_that_leaves_the_head_alone_keeps_the_target_positions_path(shards, tmp_path) -> None:
    """A kernel table whose cross-entropy entry is ``reference`` does not patch the LM head: the trainer's own
    head-on-target-positions hook must still run (it was skipped whenever any table was given, so the head computed
    the full-vocabulary logits of every prompt position); a table that patches the cross-entropy needs no hook."""
    from kernels.table import TuningTable

    for table, fused in (({"rms_norm": "fused"}, False), ({"fused_linear_cross_entropy": "chunked"}, True)):
        path = tmp_path / f"table-{fused}.json"
        TuningTable.uniform(table).save(path)
        trainer = Trainer(_recipe("sft", [{"path": str(shards["sft"]), "name": "sft"}], steps=1,
                                  _extra={"data.seq_len": 384, "kernels.table": str(path)}), tmp_path / f"t{fused}")
        batch = trainer.mixture.next_batch(0, 4)
        keep = batch.labels != -100
        seen: list[tuple[int, ...]] = []
        probe = trainer.model.get_output_embeddings().register_forward_pre_hook(
            lambda m, a, seen=seen: seen.append(tuple(a[0].shape)))
        ce, n = trainer._ce_sum(batch)
        probe.remove()
        trainer.balancer.remove()
        assert trainer.fused_ce is fused and n == int(keep.sum())
        if fused:
            assert seen == []  # the fused loss never calls the head module
        else:
            assert trainer._head_hook is not None
            assert seen and seen[-1][:-1] == (int(keep.sum()),)
        assert torch.isfinite(ce)


def _clocked(monkeypatch, seconds_at_step) -> list:
    """The trainer's clock as a function of its own step count (``seconds_at_step(step)``), so what a time budget
    decides does not depend on how fast this machine runs the tiny model."""
    import types

    import training.trainer as trainer_mod

    ref: list = []
    fake = types.SimpleNamespace(perf_counter=lambda: seconds_at_step(ref[0].step) if ref else 0.0)
    monkeypatch.setattr(trainer_mod, "time", fake)
    return ref


def test_a_time_budget_cuts_the_run_and_ends_the_schedule_there(shards, tmp_path, monkeypatch) -> None:
    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=50, warmup_steps=4, lr=1e-3,
                     min_lr_ratio=0.1, time_budget_s=95.0)
    ref = _clocked(monkeypatch, lambda step: 10.0 * step)  # 10 s a step, start-up free
    trainer = Trainer(recipe, tmp_path / "budget")
    ref.append(trainer)
    history = trainer.train()
    trainer.finish()
    # At the end of warm-up (step 4, 40 s gone, 10 s a step) 5 more steps fit 95 s: the run is 9 steps, not 50,
    # and its cosine reaches the floor on the last of them instead of sitting near the peak.
    assert [r["step"] for r in history] == list(range(1, 10))
    assert history[3]["budget_plan"] == {"total_steps": 9, "step_s": 10.0, "at_step": 4, "budget_s": 95.0}
    assert history[-1]["lr"] == pytest.approx(1e-3 * 0.1)
    assert history[4]["lr"] < history[3]["lr"]  # decaying right after warm-up, as a 9-step schedule does
    assert "val_loss/cpt" in history[-1]  # the final evaluation runs at the planned end
    state = torch.load(tmp_path / "budget" / "final" / "trainer_state.pt", weights_only=False)
    assert state["budget_plan"]["total_steps"] == 9

    # Resumed from its last checkpoint, the run keeps its plan: nothing left to train.
    resumed = Trainer(recipe, tmp_path / "budget", resume=str(tmp_path / "budget"))
    ref[0] = resumed
    assert resumed.total_steps == 9 and resumed.step == 9 and resumed.train() == []
    # The same checkpoint resumed without a budget trains to the recipe's steps (a plan binds budgeted runs only).
    unbudgeted = recipe.model_copy(update={"train": recipe.train.model_copy(update={"time_budget_s": 0.0})})
    assert Trainer(unbudgeted, tmp_path / "budget2", resume=str(tmp_path / "budget")).total_steps == 50


def test_a_machine_that_slows_after_the_plan_stops_inside_the_budget(shards, tmp_path, monkeypatch) -> None:
    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=50, warmup_steps=4,
                     time_budget_s=95.0)
    # 10 s a step through step 6, then 30 s: planned for 9 steps, step 7 ends at 90 s and an 8th would not fit.
    ref = _clocked(monkeypatch, lambda step: 10.0 * step if step <= 6 else 60.0 + 30.0 * (step - 6))
    trainer = Trainer(recipe, tmp_path / "slow")
    ref.append(trainer)
    history = trainer.train()
    assert history[3]["budget_plan"]["total_steps"] == 9
    assert [r["step"] for r in history][-1] == 7 and history[-1]["budget_stop"] == 7
    assert trainer.planned == {"total_steps": 9, "step_s": 10.0, "at_step": 4, "budget_s": 95.0, "stopped_at": 7}
    trainer.balancer.remove()


def test_min_steps_is_a_floor_under_the_time_budget(shards, tmp_path, monkeypatch) -> None:
    """A machine too slow for the budget trains min_steps anyway (past the budget, the plan saying what would have
    fit), and a slowdown after the plan does not stop it below the floor; above the floor the budget still cuts."""
    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=50, warmup_steps=4, lr=1e-3,
                     min_lr_ratio=0.1, time_budget_s=95.0, min_steps=12)
    ref = _clocked(monkeypatch, lambda step: 10.0 * step if step <= 6 else 60.0 + 30.0 * (step - 6))
    trainer = Trainer(recipe, tmp_path / "floor")
    ref.append(trainer)
    history = trainer.train()
    # 9 steps fit 95 s at 10 s a step; the floor makes it 12, the schedule ends there, and the slowdown from step 7
    # (an 8th step would end past the budget) does not stop it before the floor.
    assert history[3]["budget_plan"] == {"total_steps": 12, "step_s": 10.0, "at_step": 4, "budget_s": 95.0,
                                         "fit_steps": 9, "min_steps": 12}
    assert [r["step"] for r in history] == list(range(1, 13))
    assert not any("budget_stop" in r for r in history)
    assert history[-1]["lr"] == pytest.approx(1e-3 * 0.1)
    trainer.balancer.remove()

    # A floor below what fits changes nothing: the budget's 9 steps, no fit_steps in the plan.
    low = recipe.model_copy(update={"train": recipe.train.model_copy(update={"min_steps": 5})})
    monkeypatch.undo()
    ref = _clocked(monkeypatch, lambda step: 10.0 * step)
    trainer = Trainer(low, tmp_path / "low")
    ref.append(trainer)
    history = trainer.train()
    assert history[3]["budget_plan"] == {"total_steps": 9, "step_s": 10.0, "at_step": 4, "budget_s": 95.0}
    assert history[-1]["step"] == 9
    trainer.balancer.remove()


def test_min_steps_above_steps_names_the_field() -> None:
    from solvers.errors import ConfigError

    with pytest.raises(ConfigError, match="min_steps"):
        load_recipe("sft", {"train.steps": 10, "train.min_steps": 20})


def test_a_time_budget_on_a_progressive_recipe_names_the_field() -> None:
    from solvers.errors import ConfigError

    with pytest.raises(ConfigError, match="time_budget_s"):
        load_recipe("progressive", {"train.time_budget_s": 60.0})


@pytest.mark.parametrize("trim", [True, False])
def test_each_step_hands_freed_memory_back_unless_told_not_to(shards, tmp_path, monkeypatch, trim: bool) -> None:
    from training.device import DeviceSpec

    calls = []
    monkeypatch.setattr(DeviceSpec, "release_free_memory", lambda self: calls.append(self.name) or True)
    recipe = _recipe("sft", [{"path": str(shards["sft"]), "name": "sft"}], steps=3, trim_memory=trim)
    Trainer(recipe, tmp_path / "run").train()
    assert calls == (["cpu"] * 3 if trim else [])


@pytest.mark.parametrize(("warmup", "total", "ratio", "start"), [(2, 10, 0.25, 8), (0, 10, 0.2, 8), (4, 5, 0.2, 4),
                                                                  (10, 110, 0.1, 100), (2, 4, 0.5, 3)])
def test_wsd_is_flat_then_falls_linearly_to_the_floor(warmup, total, ratio, start) -> None:
    s = Schedule(warmup, total, 0.1, "wsd", ratio)
    assert s.decay_start == start
    assert [s(k) for k in range(warmup)] == pytest.approx([(k + 1) / warmup for k in range(warmup)])
    assert all(s(k) == 1.0 for k in range(warmup, start + 1))  # the plateau, its last step included
    falling = [s(k) for k in range(start, total + 3)]
    assert falling[total - start:] == pytest.approx([0.1] * 3)  # the floor at total, flat after
    assert all(b < a for a, b in zip(falling[:total - start], falling[1:total - start + 1], strict=True))
    # linear: equal drops from the plateau's end to the floor
    drops = {round(a - b, 9) for a, b in zip(falling[:total - start], falling[1:total - start + 1], strict=True)}
    assert len(drops) <= 1
    # cosine is unchanged: decay right after warm-up, at the floor at total
    c = Schedule(warmup, total, 0.1)
    assert c.decay_start == warmup and c(total) == pytest.approx(0.1) and c(max(warmup, 0)) == pytest.approx(1.0)


def test_a_wsd_run_extends_from_its_plateau_with_one_decay_at_the_new_end(shards, tmp_path) -> None:
    src = [{"path": str(shards["cpt"]), "name": "cpt"}]
    short = _recipe("cpt", src, steps=10, warmup_steps=2, lr=1e-3, min_lr_ratio=0.1, schedule="wsd", decay_ratio=0.25)
    out = tmp_path / "wsd"
    trainer = Trainer(short, out)
    first = trainer.train()
    trainer.finish()
    trainer.balancer.remove()
    # decay over round(0.25 * 8) = 2 steps: flat at 1e-3 through step 8, 5.5e-4 at 9, the floor at 10
    assert [r["lr"] for r in first[1:]] == pytest.approx([1e-3] * 7 + [5.5e-4, 1e-4])
    plateau = decay_checkpoint(out)
    assert plateau == out / "checkpoints" / "step-8" and (out / "final").resolve().name == "step-10"
    assert [r["step"] for r in first if "wsd_decay_start" in r] == [8]

    # Extended to 20 steps from the plateau's end: flat through step 16 (20 - round(0.25 * 18)), one decay at the
    # new end, and the metrics stay one curve (the old decay's steps 9-10 replaced).
    longer = short.model_copy(update={"train": short.train.model_copy(update={"steps": 20})})
    start = 20 - round(0.25 * 18)
    resumed = Trainer(longer, out, resume=str(plateau))
    assert resumed.step == 8 and resumed.schedule.decay_start == start
    more = resumed.train()
    resumed.finish()
    resumed.balancer.remove()
    lrs = {r["step"]: r["lr"] for r in more}
    assert all(lrs[k] == pytest.approx(1e-3) for k in range(9, start + 1))
    assert lrs[20] == pytest.approx(1e-4) and lrs[start + 1] < 1e-3
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 21))
    assert decay_checkpoint(out) == out / "checkpoints" / f"step-{start}"
    assert (out / "final").resolve().name == "step-20"
    # a cosine run has no plateau to extend from
    assert decay_checkpoint(tmp_path / "nothing") is None
