"""``hf:`` policy sampling throughput on this machine: completion tokens/s of the backend's batched generation
(KV cache, left padding, greedy) at batch 1, 8 and 32, in fp32 and bf16, on the demo's prompt (``code_only``) over
generator questions: the backend's own decode loop (``HFBackend._generate``) beside transformers' ``generate`` (the
baseline: what the backend ran before) at the same dtype and batch. Every completion is forced to the same length
(EOS suppressed) so batches compare at equal work; the decode loop's other gain, dropping rows that ended, shows only
on real, ragged completions (the demo's eval stage times). The measured best batch is what ``[policy]
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
from flywheel.policies.backends.hf import HFBackend, chat_text  # noqa: E402
from flywheel.policies.prompts import render  # noqa: E402
from flywheel.policies.spec import parse_spec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _hf_generate(backend: HFBackend, requests: list[ChatRequest]) -> int:
    """The baseline: transformers' ``generate`` on the same batch (what the backend ran before), EOS suppressed."""
    import torch
    from transformers import GenerationConfig

    tok, model = backend._tokenizer, backend._model
    enc = tok([chat_text(tok, r.messages) for r in requests], return_tensors="pt", padding=True,
              add_special_tokens=False)
    config = GenerationConfig(max_new_tokens=requests[0].max_tokens, min_new_tokens=requests[0].max_tokens,
                              do_sample=False, num_beams=1, pad_token_id=tok.pad_token_id, eos_token_id=None)
    with torch.no_grad():
        out = model.generate(**enc, generation_config=config)
    return int(out.shape[0] * (out.shape[1] - enc["input_ids"].shape[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--tokens", type=int, default=96, help="new tokens per completion (EOS suppressed)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    from flywheel.policies.backends.hf import _auto_dtype

    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    fams = ("production_planning", "transportation", "diet")
    questions = [generate_problem(fams[i % 3], derive_seed(7, i), 1).question for i in range(max(batches))]
    requests = [ChatRequest(key=str(i), messages=tuple(render("code_only", question=q, api="gurobipy").messages),
                            temperature=0.0, top_p=1.0, max_tokens=args.tokens, seed=i)
                for i, q in enumerate(questions)]
    rows = []
    for dtype in args.dtypes.split(","):
        backend = HFBackend(parse_spec(f"hf:{args.checkpoint}"), PolicySection(hf_dtype=dtype))
        backend._load()
        backend._generate(requests[:1], suppress_eos=True)  # warm-up
        for b in batches:
            for impl in ("generate", "decode"):
                t0 = time.perf_counter()
                if impl == "decode":
                    tokens = sum(o.usage["completion_tokens"] for o in backend._generate(requests[:b],
                                                                                        suppress_eos=True))
                else:
                    tokens = _hf_generate(backend, requests[:b])
                wall = time.perf_counter() - t0
                rows.append({"dtype": dtype, "impl": impl, "batch": b, "wall_s": round(wall, 2),
                             "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 1)})
                print(f"{dtype:5} {impl:9} batch {b:>3}: {tokens:>5} tokens in {wall:6.1f} s = "
                      f"{tokens / wall:7.1f} tokens/s", flush=True)
    ours = [r for r in rows if r["impl"] == "decode"]
    best = max(ours, key=lambda r: r["tokens_per_s"])
    fp32_generate = {r["batch"]: r["tokens_per_s"] for r in rows if r["impl"] == "generate" and r["dtype"] == "fp32"}
    result = {"bench": "hf_sampling", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine(), "checkpoint": str(args.checkpoint), "threads": args.threads,
              "new_tokens": args.tokens, "auto_dtype": _auto_dtype(args.checkpoint), "rows": rows,
              "best": {"dtype": best["dtype"], "batch": best["batch"]},
              "speedup_best_vs_fp32_generate_same_batch": round(best["tokens_per_s"] / fp32_generate[best["batch"]],
                                                                2) if best["batch"] in fp32_generate else None}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "hf_sampling.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"auto dtype here: {result['auto_dtype']}; best: {best['dtype']} at batch {best['batch']} "
          f"({result['speedup_best_vs_fp32_generate_same_batch']}x fp32 generate at that batch)")


if __name__ == "__main__":
    main()
