"""Continuous batching in the ``hf:`` policy: real, ragged completions decoded in fixed batches (each batch runs
until its last row ends: what the backend did before) vs one stream whose ended rows are replaced at once by
waiting prompts (``decode.stream``), at the same number of rows in flight, dtype, threads and greedy setting.

Prompts: the first N questions of a public benchmark under the ``code_only`` template (the transfer evaluations'
setting), so completions end where a fine-tuned model really ends them (end of sequence, the closed code block, a
loop, or the token limit). Greedy rows of both arms should agree token for token up to float rounding (batch
composition differs): ``identical`` counts them.

    python bench/hf_refill.py --checkpoint runs/flywheel-demo-full3/runs/sft-r0/final --prompts 32 --slots 8

Writes bench/results/hf_refill.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402
from flywheel.benchmarks import load_benchmark  # noqa: E402
from flywheel.config import PolicySection  # noqa: E402
from flywheel.policies.backends.base import ChatRequest  # noqa: E402
from flywheel.policies.backends.hf import HFBackend  # noqa: E402
from flywheel.policies.prompts import render  # noqa: E402
from flywheel.policies.spec import parse_spec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--benchmark", type=Path, default=SHARED / "mamo_easylp")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1000, help="token limit per completion")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "hf_refill.json")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    items = load_benchmark(args.benchmark)[: args.prompts]
    requests = [ChatRequest(key=str(i), messages=tuple(render("code_only", question=it.question, api="gurobipy")
                                                       .messages),
                            temperature=0.0, top_p=1.0, max_tokens=args.tokens, seed=i)
                for i, it in enumerate(items)]
    backend = HFBackend(parse_spec(f"hf:{args.checkpoint}"), PolicySection())
    backend._load()
    backend._generate(requests[:1], suppress_eos=True)  # warm-up (one-off allocations)
    arms = {}
    for arm in ("batches", "refill"):
        t0 = time.perf_counter()
        if arm == "batches":
            outs = [o for s in range(0, len(requests), args.slots) for o in backend._generate(requests[s:s + args.slots])]
        else:
            outs = backend._generate(requests, slots=args.slots)
        wall = time.perf_counter() - t0
        tokens = sum(o.usage["completion_tokens"] for o in outs)
        arms[arm] = {"wall_s": round(wall, 1), "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 1),
                     "finish_reasons": {r: sum(o.finish_reason == r for o in outs)
                                        for r in sorted({o.finish_reason for o in outs})},
                     "texts": [o.text for o in outs]}
        print(f"{arm:8}: {tokens:>6} tokens in {wall:7.1f} s = {tokens / wall:6.1f} tokens/s", flush=True)
    same = sum(a == b for a, b in zip(arms["batches"].pop("texts"), arms["refill"].pop("texts"), strict=True))
    result = {"bench": "hf_refill", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
              "checkpoint": str(args.checkpoint), "benchmark": args.benchmark.name, "prompts": len(requests),
              "slots": args.slots, "max_tokens": args.tokens, "threads": args.threads, "dtype": backend.dtype,
              "arms": arms, "identical": same,
              "speedup_wall": round(arms["batches"]["wall_s"] / arms["refill"]["wall_s"], 2)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"refill {result['speedup_wall']}x the fixed batches' wall; {same}/{len(requests)} completions identical")


if __name__ == "__main__":
    main()
