"""LM head + cross-entropy, forward + backward, on SmolLM2-135M's head (vocab 49,152, hidden 576): HF's loss (the
``reference`` backend: full logits, ``.float()``, ``F.cross_entropy`` with ignored labels) vs the project's chunked
fused linear cross-entropy, in the same dtype (bf16 autocast by default, as the trainer runs on a CPU with bf16
matrix units; ``--dtype fp32`` for the others).

Arms, same inputs, same thread count, raced round-robin (each round runs every arm once, rotating who goes first):

* ``hf_loss``: ``reference`` (what the plain loop's HF loss computes).
* ``hf_loss_targets``: the same on the target rows only (``hidden[labels != -100]``): the share of the gain that
  comes from skipping prompt rows alone.
* ``chunked_autocast`` (bf16) or ``chunked`` (fp32): the project's backend.

    .venv/bin/python bench/flce.py [--tokens 2046] [--targets 0.62] [--threads 2] [--rounds 6]

Writes bench/results/flce.json (median and best of the rounds after a warm-up, loss and gradient agreement).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench._machine import machine, versions  # noqa: E402
from kernels.ops import fused_linear_cross_entropy as flce  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2046, help="tokens per step (2 packed rows of 1023)")
    ap.add_argument("--targets", type=float, default=0.62, help="share of target tokens (the demo's SFT rows: ~62%%)")
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--dim", type=int, default=576)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "flce.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    hidden0 = torch.randn(args.tokens, args.dim, generator=g)
    weight = (torch.randn(args.vocab, args.dim, generator=g) * 0.02).requires_grad_(True)
    labels = torch.randint(0, args.vocab, (args.tokens,), generator=g)
    labels[torch.rand(args.tokens, generator=g) >= args.targets] = -100
    keep = labels != -100
    bf16 = args.dtype == "bf16"

    def targets_only(h: torch.Tensor, w: torch.Tensor, lab: torch.Tensor) -> torch.Tensor:
        return flce.reference(h[keep], w, lab[keep])

    arms = {"hf_loss": flce.reference, "hf_loss_targets": targets_only,
            ("chunked_autocast" if bf16 else "chunked"): flce.chunked_autocast if bf16 else flce.chunked}
    times: dict[str, list[float]] = {a: [] for a in arms}
    grads: dict[str, tuple[float, torch.Tensor, torch.Tensor]] = {}
    names = list(arms)
    for r in range(args.rounds + 1):
        for name in names[r % len(names):] + names[:r % len(names)]:
            hidden = hidden0.clone().requires_grad_(True)
            weight.grad = None
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = arms[name](hidden.to(torch.bfloat16) if bf16 else hidden, weight, labels)
            loss.backward()
            dt = time.perf_counter() - t0
            if r:
                times[name].append(dt)
            else:
                grads[name] = (float(loss.detach()), hidden.grad.clone(), weight.grad.clone())
    ref_loss, ref_dh, ref_dw = grads["hf_loss"]
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
        "versions": versions("torch"), "threads": args.threads, "dtype": args.dtype,
        "shape": {"tokens": args.tokens, "targets": int(keep.sum()), "vocab": args.vocab, "dim": args.dim},
        "timing": f"forward + backward, {args.rounds} rounds round-robin after one warm-up round",
        "arms": {}, "baseline": "hf_loss",
    }
    base = statistics.median(times["hf_loss"])
    for name in arms:
        loss, dh, dw = grads[name]
        med = statistics.median(times[name])
        result["arms"][name] = {
            "median_ms": round(med * 1e3, 1), "best_ms": round(min(times[name]) * 1e3, 1),
            "speedup_vs_hf_loss": round(base / med, 3), "loss_rel_err": abs(loss - ref_loss) / abs(ref_loss),
            "dh_rel_err": float((dh - ref_dh).norm() / ref_dh.norm()),
            "dw_rel_err": float((dw - ref_dw).norm() / ref_dw.norm())}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{'arm':<18} {'median ms':>10} {'best ms':>9} {'vs hf_loss':>10} {'dW rel err':>10}")
    for name, a in result["arms"].items():
        print(f"{name:<18} {a['median_ms']:>10.1f} {a['best_ms']:>9.1f} {a['speedup_vs_hf_loss']:>9.2f}x "
              f"{a['dw_rel_err']:>10.1e}")


if __name__ == "__main__":
    main()
