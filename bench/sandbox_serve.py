"""``flywheel sandbox serve`` from its clients' side, against the naive ``python prog.py`` loop, in one run.

(a) naive: ``bench/sandbox.py``'s loop (a fresh interpreter per program, 2 at a time) on a prefix of the corpus;
(b) served: the same 200+ program mixed corpus (``bench/sandbox.py``'s), sent by 4 concurrent clients (each its
    quarter, in /v1/batch chunks) to a warm ``sandbox serve --workers 2``; wall clock from the first request to the
    last reply, as the clients see it (HTTP, JSON, classification included);
(c) requests/s of ``POST /run_code`` (SandboxFusion's shape) with a trivial program, 4 concurrent clients;
(d) cold ready: process start to the first 200 of /readyz, median of 3 fresh servers (also the CPU seconds the
    server process used until then: on a shared machine the wall figure mostly measures the others' load);
(e) ``flywheel sandbox batch`` without a server on the corpus: the CLI end to end, interpreter and pool start-up
    included, as a user runs it.

    nice -n 10 .venv/bin/python bench/sandbox_serve.py [--programs 204] [--naive-sample 48]

Targets (issue 19): (b) >= 15x naive; (d) <= 2 s; (e) >= 10x naive. Writes bench/results/sandbox_serve.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import machine, versions  # noqa: E402
from sandbox import corpus, run_naive  # noqa: E402

from solvers.sandbox.client import SandboxClient  # noqa: E402
from solvers.sandbox.wire import program_row  # noqa: E402

FLYWHEEL = str(Path(sys.executable).with_name("flywheel"))
READY_CPU: list[float] = []  # CPU seconds each server process used until ready (less distorted by other load)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workers: int, warm: str = "default") -> tuple[subprocess.Popen, str, float]:
    port = _port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    proc = subprocess.Popen([FLYWHEEL, "sandbox", "serve", "--port", str(port), "--workers", str(workers),
                             "--warm", warm], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                wall = time.perf_counter() - t0
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                READY_CPU.append(sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK"))  # utime + stime
                return proc, url, wall
        except httpx.TransportError:
            if proc.poll() is not None:
                raise RuntimeError("server exited") from None
            time.sleep(0.01)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def served(programs: list, url: str, clients: int) -> dict:
    shares = [programs[i::clients] for i in range(clients)]
    statuses: dict[str, int] = {}

    def client(share: list) -> list:
        with SandboxClient(url, chunk=8, in_flight=2) as c:
            return list(c.map(share, timeout_s=60))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as ex:
        results = [e for out in ex.map(client, shares) for e in out]
    wall = time.perf_counter() - t0
    for e in results:
        statuses[str(e.status)] = statuses.get(str(e.status), 0) + 1
    return {"programs": len(results), "clients": clients, "wall_s": wall, "programs_per_s": len(results) / wall,
            "statuses": statuses}


def run_code_rate(url: str, clients: int, per_client: int) -> dict:
    latencies: list[float] = []

    def client(_: int) -> int:
        ok = 0
        with httpx.Client(timeout=60) as c:
            for _ in range(per_client):
                t = time.perf_counter()
                r = c.post(f"{url}/run_code", json={"code": "print(1)", "language": "python", "run_timeout": 5})
                latencies.append(time.perf_counter() - t)
                ok += r.status_code == 200 and r.json()["run_result"]["stdout"] == "1\n"
        return ok

    for _ in range(4):  # warm the no-import flavour
        httpx.post(f"{url}/run_code", json={"code": "print(1)"}, timeout=60)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as ex:
        ok = sum(ex.map(client, range(clients)))
    wall = time.perf_counter() - t0
    n = clients * per_client
    return {"requests": n, "ok": ok, "clients": clients, "wall_s": wall, "requests_per_s": n / wall,
            "p50_s": statistics.median(latencies), "p95_s": sorted(latencies)[int(0.95 * len(latencies))]}


def batch_cli(programs: list, workers: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        infile, out = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        infile.write_text("".join(json.dumps(program_row(p)) + "\n" for p in programs))
        t0 = time.perf_counter()
        res = subprocess.run([FLYWHEEL, "sandbox", "batch", str(infile), "--out", str(out), "--workers", str(workers),
                              "--timeout", "60", "--format", "json"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if res.returncode != 0:
            raise RuntimeError(res.stderr)
        statuses = json.loads(res.stdout.strip().splitlines()[-1])
    return {"programs": len(programs), "wall_s": wall, "programs_per_s": len(programs) / wall, "statuses": statuses}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=204)
    ap.add_argument("--naive-sample", type=int, default=48)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--run-code-requests", type=int, default=100, help="per client")
    args = ap.parse_args()
    programs = corpus(args.programs)
    info = machine()
    print(f"corpus {len(programs)} programs; load {os.getloadavg()}", flush=True)

    ready = []
    for _ in range(3):
        proc, _url, secs = start_server(args.workers, "none")
        ready.append(secs)
        stop(proc)
    print(f"cold ready: {[round(r, 3) for r in ready]} s wall, {READY_CPU} s CPU", flush=True)

    batch = batch_cli(programs, args.workers)
    print(f"sandbox batch (no server, start-up incl.): {batch['programs_per_s']:.1f} prog/s", flush=True)

    proc, url, _ = start_server(args.workers)
    try:
        served(programs, url, args.clients)  # warm pass: every flavour's workers started
        serve = served(programs, url, args.clients)
        print(f"served, warm, {args.clients} clients: {serve['programs_per_s']:.1f} prog/s", flush=True)
        rc = run_code_rate(url, args.clients, args.run_code_requests)
        print(f"/run_code trivial: {rc['requests_per_s']:.1f} req/s (p50 {rc['p50_s'] * 1e3:.1f} ms)", flush=True)
    finally:
        stop(proc)

    naive = run_naive(programs[:args.naive_sample], args.workers)
    print(f"naive python prog.py: {naive['programs_per_s']:.2f} prog/s", flush=True)

    base = naive["programs_per_s"]
    ratios = {"served_vs_naive": serve["programs_per_s"] / base, "batch_cli_vs_naive": batch["programs_per_s"] / base}
    print(f"{'runner':44} {'prog/s':>8} {'x naive':>8}")
    for name, r in (("naive python prog.py (2 at a time)", naive), (f"serve, warm, {args.clients} clients", serve),
                    ("sandbox batch CLI, no server (cold)", batch)):
        print(f"{name:44} {r['programs_per_s']:>8.2f} {r['programs_per_s'] / base:>7.1f}x")
    print(f"/run_code trivial programs: {rc['requests_per_s']:.1f} requests/s ({args.clients} clients)")
    print(f"cold ready median {statistics.median(ready):.2f} s; targets: served >= 15x, batch >= 10x, ready <= 2 s")
    load = os.getloadavg()
    print(f"load average start {info['load_avg_1m']} end {load[0]} on {info['cores']} cores (shared machine)")
    out = {"date": datetime.datetime.now(datetime.UTC).isoformat(), "machine": info | {"load_avg_1m_end": load[0]},
           "versions": versions("fastapi", "uvicorn", "httpx", "prometheus_client"), "args": vars(args),
           "naive": naive, "served": serve, "run_code": rc, "batch_cli": batch,
           "cold_ready_s": ready, "cold_ready_median_s": statistics.median(ready),
           "cold_ready_cpu_s": READY_CPU[:3], "ratios": ratios,
           "targets": {"served_vs_naive": 15, "batch_cli_vs_naive": 10, "cold_ready_s": 2.0}}
    path = ROOT / "bench" / "results" / "sandbox_serve.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
