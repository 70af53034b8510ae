"""``hf:`` policy sampling throughput on this machine: completion tokens/s of the backend's batched generation
(KV cache, left padding, greedy) at batch 1, 8 and 32, on the demo's prompt (``code_only``) over generator
questions. The same code path a round runs (``HFBackend._generate``); every completion is forced to the same
length (EOS suppressed) so batches compare at equal work. The measured best batch is what ``[policy]
concurrency`` should be for ``hf:`` on this machine (the demo's ``batch_generate``).

    python bench/hf_sampling.py --checkpoint runs/flywheel-demo-speedrun/runs/sft-r0/final --tokens 96

Writes bench/results/hf_sampling.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402
from flywheel.config import PolicySection  # noqa: E402
from flywheel.generators.base import derive_seed, generate_problem  # noqa: E402
from flywheel.policies.backends.base import ChatRequest  # noqa: E402
from flywheel.policies.backends.hf import HFBackend  # noqa: E402
from flywheel.policies.prompts import render  # noqa: E402
from flywheel.policies.spec import parse_spec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--tokens", type=int, default=96, help="new tokens per completion (EOS suppressed)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    backend = HFBackend(parse_spec(f"hf:{args.checkpoint}"), PolicySection())
    fams = ("production_planning", "transportation", "diet")
    questions = [generate_problem(fams[i % 3], derive_seed(7, i), 1).question for i in range(max(batches))]
    requests = [ChatRequest(key=str(i), messages=tuple(render("code_only", question=q, api="gurobipy").messages),
                            temperature=0.0, top_p=1.0, max_tokens=args.tokens, seed=i)
                for i, q in enumerate(questions)]
    backend._load()
    model = backend._model
    model.generation_config.suppress_tokens = [backend._tokenizer.eos_token_id]  # equal work per row
    backend._generate(requests[:1])  # warm-up
    rows = []
    for b in batches:
        t0 = time.perf_counter()
        out = backend._generate(requests[:b])
        wall = time.perf_counter() - t0
        tokens = sum(o.usage["completion_tokens"] for o in out)
        rows.append({"batch": b, "wall_s": round(wall, 2), "completion_tokens": tokens,
                     "tokens_per_s": round(tokens / wall, 1), "prompt_tokens": out[0].usage["prompt_tokens"]})
        print(f"batch {b:>3}: {tokens:>5} tokens in {wall:6.1f} s = {tokens / wall:7.1f} tokens/s", flush=True)
    best = max(rows, key=lambda r: r["tokens_per_s"])
    result = {"bench": "hf_sampling", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine(), "checkpoint": str(args.checkpoint), "threads": args.threads,
              "new_tokens": args.tokens, "rows": rows, "best_batch": best["batch"],
              "speedup_best_vs_batch1": round(best["tokens_per_s"] / rows[0]["tokens_per_s"], 2)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "hf_sampling.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"best batch {best['batch']} ({result['speedup_best_vs_batch1']}x batch 1)")


if __name__ == "__main__":
    main()
