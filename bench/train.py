"""Tiny Qwen3-MoE training throughput on CPU (bf16): a plain transformers loop vs ``flywheel train``.

Baseline (a): the loop people write first: ``model(input_ids, labels=...)`` on the same token rows, AdamW, bf16
autocast, no packing awareness (documents in a row attend to each other), no MoE balancing.
Candidate (b): ``flywheel train``'s code path (``training.launch.launch``) on the same rows and steps: document-aware
packing, MoE aux loss and per-expert stats, metrics logging. With ``--kernels-table`` the candidate also loads a
kernel tuning table (the kernels issue's target is >= 1.5x the baseline).

Each arm runs in its own subprocess so peak RSS is its own. Reported: median tokens/s over steps after the first
(warm-up), MFU against this CPU's measured bf16 matmul peak, peak RSS, and both loss curves (PNG). The machine is a
shared 2-core box while other engineers work: absolute numbers are contended; the ratio is the quantity to read.
On a CPU without bf16 matmul instructions (this one: AVX2 only; ``bf16_matmul_hw`` in the JSON) torch emulates bf16,
so the measured bf16 peak is low and MFU reads high; ``--dtype fp32`` runs the same comparison in native precision.
"""

from __future__ import annotations

import argparse
import json
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

STEPS, ROWS, SEQ = 12, 8, 128


def _recipe(data: Path, out: Path, table: str, dtype: str):  # noqa: ANN202
    from training.config import load_recipe

    return load_recipe("cpt", {"data.sources": [{"path": str(data / "cpt"), "name": "cpt"}], "train.steps": STEPS,
                               "train.batch_rows": ROWS, "train.micro_batch": ROWS, "data.seq_len": SEQ,
                               "train.dtype": dtype, "train.eval_every": 0, "train.save_every": 0,
                               "train.warmup_steps": 5, "tokenizer.vocab_size": 1024, "kernels.table": table or None,
                               "name": out.name})


def arm_flywheel(data: Path, out: Path, table: str, dtype: str) -> dict:
    from training.launch import launch

    launch(_recipe(data, out, table, dtype), out)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "loss" in r]
    config = json.loads((out / "config.json").read_text())
    return {"loss": [r["loss"] for r in rows], "step_s": [r["step_s"] for r in rows],
            "tokens_per_step": ROWS * SEQ, "flops_per_token": config["flops_per_token"],
            "peak_flops": config["peak_flops"], "peak_source": config["peak_source"]}


def arm_plain(data: Path, out: Path, tokenizer_dir: Path, dtype: str) -> dict:
    import torch

    from training.data import Mixture, load_source
    from training.flops import flops_per_token, measure_cpu_peak
    from training.models import build_model
    from training.tokenizer import load_tokenizer
    from training.trainer import lr_lambda

    recipe = _recipe(data, out, "", dtype)
    tok = load_tokenizer(tokenizer_dir)
    src = load_source(str(data / "cpt"), "cpt", 1.0, tok, SEQ, 8)
    mixture = Mixture([src], recipe.train.seed)
    model = build_model("qwen3_moe_tiny", "", len(tok), {}, recipe.train.seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.train.lr, betas=recipe.train.betas,
                            weight_decay=recipe.train.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(recipe.train.warmup_steps, STEPS,
                                                             recipe.train.min_lr_ratio))
    losses, times = [], []
    for step in range(STEPS):
        t0 = time.perf_counter()
        batch = mixture.next_batch(step, ROWS)
        labels = batch.input_ids.masked_fill(batch.input_ids == tok.pad_token_id, -100)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(input_ids=batch.input_ids, labels=labels, use_cache=False).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.train.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    return {"loss": losses, "step_s": times, "tokens_per_step": ROWS * SEQ,
            "flops_per_token": flops_per_token(model, SEQ),
            "peak_flops": measure_cpu_peak(torch.bfloat16 if dtype == "bf16" else torch.float32),
            "peak_source": f"measured:cpu-{dtype}-matmul"}


def _child(args: argparse.Namespace) -> None:
    data, out = Path(args.data), Path(args.out)
    result = (arm_plain(data, out, Path(args.tokenizer), args.dtype) if args.arm == "plain"
              else arm_flywheel(data, out, args.kernels_table, args.dtype))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(args.result).write_text(json.dumps(result))


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=["plain", "flywheel"])
    parser.add_argument("--data", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--result", default="")
    parser.add_argument("--tokenizer", default="")
    parser.add_argument("--kernels-table", default="")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16",
                        help="bf16 autocast (the issue's setting) or fp32 (this CPU has no bf16 matmul units)")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench-train"))
    parser.add_argument("--repeats", type=int, default=2, help="alternating runs per arm")
    args = parser.parse_args()
    if args.arm:
        _child(args)
        return
    import tokenizers
    import torch
    import transformers

    from training.synthetic import write_problem_shards

    work = Path(args.work)
    data = work / "shards"
    if not (data / "cpt" / "train.parquet").is_file():
        write_problem_shards(data, n_train=200, n_val=16, seed=5)
    fly_out = work / f"flywheel-{args.dtype}"
    runs: dict[str, list[dict]] = {"flywheel": [], "plain": []}
    # Arms alternate (A B A B ...) so that a burst of load from other jobs on the shared machine hits both.
    for rep in range(args.repeats):
        for arm in ("flywheel", "plain"):  # flywheel first: it trains the tokenizer the plain arm then reuses
            res_file = work / f"{arm}-{args.dtype}-{rep}.json"
            out = fly_out if arm == "flywheel" and rep == 0 else work / f"{arm}-{args.dtype}-{rep}"
            cmd = [sys.executable, __file__, "--arm", arm, "--data", str(data), "--out", str(out),
                   "--result", str(res_file), "--tokenizer", str(fly_out / "tokenizer"),
                   "--kernels-table", args.kernels_table, "--dtype", args.dtype]
            subprocess.run(cmd, check=True, cwd=ROOT)
            runs[arm].append(json.loads(res_file.read_text()))
    results = {arm: reps[0] for arm, reps in runs.items()}
    summary = {}
    for arm, reps in runs.items():
        r = reps[0]
        tps = _median([r["tokens_per_step"] / s for rep in reps for s in rep["step_s"][1:]])
        summary[arm] = {"tokens_per_s": tps, "mfu": tps * r["flops_per_token"] / r["peak_flops"],
                        "peak_rss_mb": max(rep["peak_rss_mb"] for rep in reps), "final_loss": r["loss"][-1],
                        "peak_flops": r["peak_flops"], "peak_source": r["peak_source"],
                        "step_s_all": [s for rep in reps for s in rep["step_s"]]}
    ratio = summary["flywheel"]["tokens_per_s"] / summary["plain"]["tokens_per_s"]
    print(f"{'arm':10s} {'tokens/s':>10s} {'MFU %':>8s} {'peak RSS MB':>12s} {'final loss':>10s}")
    for arm, s in summary.items():
        print(f"{arm:10s} {s['tokens_per_s']:10.0f} {100 * s['mfu']:8.3f} {s['peak_rss_mb']:12.0f} "
              f"{s['final_loss']:10.4f}")
    print(f"flywheel / plain tokens/s: {ratio:.2f}x  (median over steps 2..{STEPS} of {args.repeats} alternating "
          "runs per arm; contended 2-core CPU)")
    suffix = "" if args.dtype == "bf16" else f"_{args.dtype}"
    _plot(results, RESULTS / f"train_curves{suffix}.png")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"train{suffix}.json").write_text(json.dumps({
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": _cores(), "python": platform.python_version(),
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "tokenizers": tokenizers.__version__, "bf16_matmul_hw": _bf16_hw()},
        "setup": {"model": "qwen3_moe_tiny", "dtype": args.dtype, "steps": STEPS, "rows": ROWS, "seq_len": SEQ,
                  "kernels_table": args.kernels_table or None, "repeats": args.repeats},
        "note": "shared 2-core machine with other engineers' jobs running: absolute figures are contended",
        "summary": summary, "speedup_tokens_per_s": ratio,
        "loss_curves": {arm: r["loss"] for arm, r in results.items()}}, indent=2))


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for arm, r in results.items():
        axes[0].plot(range(1, len(r["loss"]) + 1), r["loss"], label=arm)
        axes[1].plot(range(1, len(r["step_s"]) + 1), [r["tokens_per_step"] / s for s in r["step_s"]], label=arm)
    axes[0].set(xlabel="step", ylabel="train loss", title="loss (plain: incl. cross-document targets)")
    axes[1].set(xlabel="step", ylabel="tokens/s", title="throughput")
    for ax in axes:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _bf16_hw() -> bool:
    """Does the CPU have bf16 matmul instructions? Without them torch emulates bf16 and it is far slower than fp32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _cores() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
