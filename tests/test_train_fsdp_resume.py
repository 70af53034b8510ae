"""Resuming a 2-process gloo FSDP2 run: the same loss curve, optimizer and data position, a loadable HF checkpoint.

Reuses the tiny shards and recipe helper of ``test_train_run``. Each ``launch(..., nproc=2)`` starts torchrun with
two CPU ranks. Four short runs: 4 steps at 2 ranks, then the last 2 steps resumed at 2 ranks, at 1 rank, and at 1
rank from an index-keyed (pre-name-key) checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_train_run import _recipe, shards  # noqa: F401  (shards is a fixture used by name)

from training.launch import launch
from training.trainer import STATE_FILE, run

pytestmark = pytest.mark.slow


def _losses(run_dir: Path) -> dict[int, float]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return {r["step"]: r["loss"] for r in rows}


def _state(ckpt: Path) -> dict:
    return torch.load(ckpt / STATE_FILE, map_location="cpu", weights_only=False)


def _assert_same_optimizer(a: dict, b: dict) -> None:
    # Through set_optimizer_state_dict, ``betas`` comes back a list where AdamW made a tuple: compare as JSON.
    assert json.dumps(a["param_groups"]) == json.dumps(b["param_groups"])
    assert a["state"].keys() == b["state"].keys()
    for name, sa in a["state"].items():
        sb = b["state"][name]
        assert sa.keys() == sb.keys(), name
        for key in sa:
            assert torch.equal(torch.as_tensor(sa[key]), torch.as_tensor(sb[key])), (name, key)


def test_two_process_fsdp2_resume_reproduces_the_uninterrupted_run(shards, tmp_path) -> None:  # noqa: F811
    # DeepSeek-V3 tiny: its router bias is a buffer the trainer updates, so resume must carry buffers too.
    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=4, save_every=2, micro_batch=4,
                     _extra={"model.arch": "deepseek_v3_tiny"})
    full_dir, resumed_dir = tmp_path / "full", tmp_path / "resumed"
    full = launch(recipe, full_dir, nproc=2)
    assert full["steps"] == 4
    assert json.loads((full_dir / "config.json").read_text())["world"] == 2

    # The step-2 checkpoint carries a real optimizer state: every parameter, by name, with moments from 2 steps.
    mid = _state(full_dir / "checkpoints" / "step-2")
    assert mid["step"] == 2 and mid["world"] == 2
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(full_dir / "checkpoints" / "step-2")
    moments = mid["optimizer"]["state"]
    assert set(moments) == {name for name, _ in model.named_parameters()}
    assert all(float(s["step"]) == 2 and s["exp_avg"].abs().sum() > 0 for s in moments.values())

    shutil.copytree(full_dir, resumed_dir, symlinks=True)
    shutil.rmtree(resumed_dir / "checkpoints" / "step-4")
    resumed = launch(recipe, resumed_dir, nproc=2, resume=str(resumed_dir / "checkpoints" / "step-2"))
    assert resumed["steps"] == 4

    want, got = _losses(full_dir), _losses(resumed_dir)
    assert sorted(got) == [1, 2, 3, 4]
    # Same world size, same gloo all-reduce (two ranks: one fixed summation order), fp32 weights and optimizer
    # moments restored from fp32 files, same data cursor: every operation repeats exactly, so no tolerance.
    assert [got[s] for s in (3, 4)] == [want[s] for s in (3, 4)]

    # Not just the weights: after the resumed steps 3-4, optimizer moments and step counts, scheduler and data
    # cursor equal the uninterrupted run's. A fresh optimizer would end at step 2 with other moments; a reset
    # cursor would have fed steps 3-4 the rows of steps 1-2 (and changed their losses above).
    a, b = _state(full_dir / "final"), _state(resumed_dir / "final")
    assert a["step"] == b["step"] == 4
    _assert_same_optimizer(a["optimizer"], b["optimizer"])
    assert all(float(s["step"]) == 4 for s in b["optimizer"]["state"].values())
    assert a["scheduler"] == b["scheduler"]
    assert a["data"] == b["data"] != mid["data"]

    # The final checkpoint is a plain HF folder with the uninterrupted run's weights (router bias buffers
    # included), and transformers loads it.
    reference, weights = (load_file(d / "final" / "model.safetensors") for d in (full_dir, resumed_dir))
    assert reference.keys() == weights.keys()
    assert all(torch.equal(weights[k], reference[k]) for k in reference)
    assert any(k.endswith("e_score_correction_bias") for k in weights)
    model = AutoModelForCausalLM.from_pretrained(resumed_dir / "final")
    assert type(model).__name__ == "DeepseekV3ForCausalLM"
    ids = torch.arange(1, 17).unsqueeze(0)
    assert torch.isfinite(model(input_ids=ids, labels=ids).loss)

    # The checkpoint format does not depend on the world size: one process resumes the 2-process step-2 checkpoint.
    one_dir = tmp_path / "one"
    shutil.copytree(resumed_dir, one_dir, symlinks=True)
    shutil.rmtree(one_dir / "checkpoints" / "step-4")
    run(recipe, one_dir, resume=str(one_dir / "checkpoints" / "step-2"))
    one = _losses(one_dir)
    # One rank accumulates both micro-batches locally where two ranks reduce-scatter: only fp32 summation order
    # differs, which moves the losses by ~1e-7 relative (as in test_fsdp2_two_processes_match_one_process).
    assert [one[s] for s in (3, 4)] == pytest.approx([want[s] for s in (3, 4)], rel=1e-5)
    _assert_close_optimizer(a["optimizer"], _state(one_dir / "final")["optimizer"])

    # A 1-process checkpoint from before name keys (``optimizer.state_dict()``: parameters by index) still resumes
    # on one process, to the same bits as the name-keyed load of the same values.
    legacy_dir = tmp_path / "legacy"
    shutil.copytree(resumed_dir, legacy_dir, symlinks=True)
    shutil.rmtree(legacy_dir / "checkpoints" / "step-4")
    ckpt = legacy_dir / "checkpoints" / "step-2"
    state = _state(ckpt)
    order = [name for group in state["optimizer"]["param_groups"] for name in group["params"]]
    index = {name: i for i, name in enumerate(order)}
    state["optimizer"] = {"state": {index[n]: s for n, s in state["optimizer"]["state"].items()},
                          "param_groups": [{**g, "params": [index[n] for n in g["params"]]}
                                           for g in state["optimizer"]["param_groups"]]}
    torch.save(state, ckpt / STATE_FILE)
    run(recipe, legacy_dir, resume=str(ckpt))
    legacy = _losses(legacy_dir)
    assert [legacy[s] for s in (3, 4)] == [one[s] for s in (3, 4)]


def _assert_close_optimizer(a: dict, b: dict) -> None:
    assert a["state"].keys() == b["state"].keys()
    for name, sa in a["state"].items():
        sb = b["state"][name]
        assert float(sa["step"]) == float(sb["step"]) == 4, name
        # Adam moments after 4 steps whose gradients differ only in fp32 summation order: close, not equal.
        torch.testing.assert_close(sb["exp_avg"], sa["exp_avg"], rtol=1e-3, atol=1e-7)
        torch.testing.assert_close(sb["exp_avg_sq"], sa["exp_avg_sq"], rtol=1e-3, atol=1e-10)


def test_two_ranks_with_different_clocks_plan_one_time_budget(shards, tmp_path) -> None:  # noqa: F811
    """``[train] time_budget_s`` under FSDP2: every rank must cut the run at the same step, or the one that stops
    first leaves the other waiting in a collective. Rank 0's clock reads 10 s a step, rank 1's 30 s
    (``tests/support/clocked_rank.py``). Alone, rank 0 would plan 4 + (200 - 40) // 10 = 20 steps and rank 1
    4 + (200 - 120) // 30 = 6; the ranks' mean (20 s a step, 80 s gone at step 4) gives both 4 + 120 // 20 = 10."""
    import os
    import signal
    import subprocess
    import sys

    recipe = _recipe("cpt", [{"path": str(shards["cpt"]), "name": "cpt"}], steps=50, warmup_steps=4, micro_batch=4,
                     time_budget_s=200.0)
    out = tmp_path / "budget"
    out.mkdir()
    spec = out / "launch_recipe.json"
    spec.write_text(json.dumps(recipe.model_dump(mode="json")))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "tests.support.clocked_rank", "10,30", str(spec), str(out), "cpu", ""]
    root = Path(__file__).resolve().parents[1]
    # A rank left waiting in a collective would hang: the timeout turns that into a failure. SIGTERM to torchrun
    # makes its agent stop the ranks (they run in their own process groups).
    log = tmp_path / "ranks.log"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=root, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=err, stderr=err)
        try:
            proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            finally:
                proc.kill()
            pytest.fail("the ranks did not finish: they took different budget decisions and one waits for the other")
    assert proc.returncode == 0, log.read_text()[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 10
    assert summary["budget_plan"] == {"total_steps": 10, "step_s": 20.0, "at_step": 4, "budget_s": 200.0}
    assert sorted(_losses(out)) == list(range(1, 11))
