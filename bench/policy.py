"""Policy client throughput: requests/s against a local fake-latency OpenAI-compatible server (a real HTTP server on
127.0.0.1 that returns a canned completion after a fixed delay), sequential client (baseline: one blocking request
after another, what a simple script does) vs our async bounded-concurrency client, plus the cache hit rate and
time of a re-run. Writes bench/results/policy.json.

Run: .venv/bin/python bench/policy.py [--requests 64] [--delay 0.05] [--concurrency 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import cpu_model  # noqa: E402
from flywheel.config import PolicySection  # noqa: E402
from flywheel.policies import generate_attempts, load_problems_file  # noqa: E402
from flywheel.policies.prompts import render  # noqa: E402
from tests.support.scripted_server import ScriptedServer  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "policy.json"


def problems_file(directory: Path, n: int) -> Path:
    f = directory / "bench.jsonl"
    f.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Maximise {i + 3}x subject to x <= {i + 1}.",
                                     "answer": float((i + 3) * (i + 1))}) + "\n" for i in range(n)))
    return f


def sequential(url: str, problems: list, samples: int) -> float:
    """Baseline: a blocking client, one request at a time (same bodies as ours)."""
    t0 = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for p in problems:
            prompt = render("formulation_code", question=p.question, api="gurobipy")
            for k in range(samples):
                r = client.post(f"{url}/chat/completions", json={
                    "model": "fake", "messages": list(prompt.messages), "temperature": 0.7, "max_tokens": 256,
                    "seed": k})
                r.raise_for_status()
                assert r.json()["choices"][0]["message"]["content"]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--delay", type=float, default=0.2, help="server-side latency per request (s)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    samples = 2
    n_problems = args.requests // samples
    settings = PolicySection(concurrency=args.concurrency, timeout_s=30, max_tokens=256)
    seq_s, ours_s, rerun_s, hit_rates, sent_rerun = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(delay_s=args.delay) as server:
        problems = load_problems_file(problems_file(Path(tmp), n_problems))
        spec = f"openai:fake@{server.url}"
        # Warm-up: the first run pays imports and connection set-up, which are not what we measure.
        generate_attempts(problems[:2], spec, samples=1, temperature=0.7, api="gurobipy", round_id=0,
                          cache_dir=Path(tmp) / "warm", progress=False, settings=settings)
        sequential(server.url, problems[:2], 1)
        for rep in range(args.repeats):
            seq_s.append(sequential(server.url, problems, samples))
            cache = Path(tmp) / f"cache{rep}"
            run = generate_attempts(problems, spec, samples=samples, temperature=0.7, api="gurobipy", round_id=0,
                                    cache_dir=cache, progress=False, settings=settings)
            assert len(run.attempts) == args.requests and not run.infra_errors
            ours_s.append(run.wall_s)
            again = generate_attempts(problems, spec, samples=samples, temperature=0.7, api="gurobipy", round_id=0,
                                      cache_dir=cache, progress=False, settings=settings)
            rerun_s.append(again.wall_s)
            hit_rates.append(again.counters["cache_hit_rate"])
            sent_rerun.append(again.requests_sent)
    n = args.requests
    seq_rps = n / statistics.median(seq_s)
    ours_rps = n / statistics.median(ours_s)
    result = {
        "bench": "policy",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "what": "requests/s of chat completions against a local fixed-latency server; cache hit rate on re-run",
        "baseline": "sequential blocking httpx.Client, one request at a time",
        "params": {"requests": n, "server_delay_s": args.delay, "concurrency": args.concurrency,
                   "repeats": args.repeats},
        "sequential_rps_median": round(seq_rps, 2),
        "async_rps_median": round(ours_rps, 2),
        "speedup": round(ours_rps / seq_rps, 2),
        "ideal_speedup": args.concurrency,
        "rerun_cache_hit_rate": min(hit_rates),
        "rerun_requests_sent": max(sent_rerun),
        "rerun_wall_s_median": round(statistics.median(rerun_s), 4),
        "raw_s": {"sequential": seq_s, "async": ours_s, "rerun": rerun_s},
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "httpx": httpx.__version__, "load_avg_1m": os.getloadavg()[0],
                    "note": "shared 2-core machine under heavy contention from other jobs: absolute numbers are "
                            "distorted; the ratio is the figure to quote"},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'client':<28}{'req/s (median)':>16}")
    print(f"{'sequential (baseline)':<28}{seq_rps:>16.1f}")
    print(f"{f'async, concurrency {args.concurrency}':<28}{ours_rps:>16.1f}")
    print(f"speedup {ours_rps / seq_rps:.1f}x (ideal {args.concurrency}x at {args.delay * 1000:.0f} ms server latency)")
    print(f"re-run: cache hit rate {min(hit_rates):.0%}, {max(sent_rerun)} requests sent, "
          f"{statistics.median(rerun_s) * 1000:.0f} ms")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
