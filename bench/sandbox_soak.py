"""Soak of the local sandbox pool: N programs (default 10,000) of a mixed corpus, and whether anything accumulates.

    nice -n 10 .venv/bin/python bench/sandbox_soak.py [--programs 10000] [--every 500] [--workers 2]

The corpus is what a flywheel really feeds the sandbox, not only happy programs: bench/sandbox.py's solver programs
(gurobipy, pyomo+HiGHS, ortools GLOP/SCIP/CP-SAT, coptpy) plus failing programs (syntax, import, build, runtime
errors, infeasible, unbounded, no solve), timing-out ones (busy loop, sleep, SIGTERM ignored) and hostile ones (fork
bomb, memory bomb, output flood, orphaned daemon, unreaped zombies, thread explosion, fd exhaustion, oversized file,
network, reads and writes outside the sandbox, hook tampering, spoofed prints, killing the parent). Kinds are drawn
by a seeded generator with fixed weights, so every run executes the same programs.

The programs go through one shared warm pool (``run_batch``, default workers = the cores) in consecutive batches
of ``--every`` programs: the pool, its workers and their recycling run on across batches, and between two batches
nothing is in flight, so every checkpoint reads exact figures rather than whatever happened to be running:

- the parent's RSS (VmRSS) and its open file descriptors;
- processes in the parent's whole tree (workers, bubblewrap, anything a program left), the live workers among them
  (the pool may keep several per unit of concurrency, one per flavour of program) and zombies;
- live processes under the pool's program uids: a worker's prepared next child (forked and locked down ahead of
  the next program; at most one per worker) and strays (anything else: what outlived its program);
- the pool's cgroup directories (``flywheel-<parent pid>-*``).

A checkpoint waits (up to 5 s) for the teardown of the batch's last programs, which the pool finishes after
handing their results back; what the instant of the batch's end showed is recorded beside it. After the last batch
the pool is closed and the tree, the program uids and the cgroup directories must be empty.

Flatness criterion (asserted; a leak of ~0.5 KB per program fails the RSS bound over 10,000 programs): parent RSS
from the first checkpoint to the last grows by at most 5 MB; open fds, tree processes, live workers and cgroup
directories in the second half of the checkpoints never exceed their maximum over the first half (no growth: the pool's idle workers
come and go with recycling and flavours, within its own bound); zero zombies and zero strays at every checkpoint, at
most one prepared child per live worker; nothing left after close.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine, versions  # noqa: E402
from bench.sandbox import program as solver_program  # noqa: E402 - the same happy programs as bench/sandbox.py
from solvers.sandbox import Program, SandboxConfig, close_pools, default_workers, run_batch  # noqa: E402
from solvers.sandbox.pool import shared_pool  # noqa: E402

RSS_GROWTH_MAX_MB = 5.0
SETTLE_MAX_S = 5.0  # the pool's own teardown (kill the cgroup, reap) takes milliseconds; 5 s is far beyond it

GRB = "import gurobipy as gp\nm = gp.Model(); m.Params.OutputFlag = 0\n"
# kind -> (weight per mille, code or None for bench/sandbox.py's program of that solver kind, expected statuses).
# An exception before any solve call is a model_build_error in the taxonomy, whatever refused it (seccomp, the
# read-only system, rlimits, the pids cap).
KINDS: dict[str, tuple[int, str | None, tuple[str, ...]]] = {
    # happy: real solver programs
    "gurobipy": (150, None, ("ok",)),
    "pyomo-highs": (90, None, ("ok",)),
    "ortools-glop": (120, None, ("ok",)),
    "ortools-scip": (60, None, ("ok",)),
    "ortools-cpsat": (110, None, ("ok",)),
    "coptpy": (70, None, ("ok",)),
    "function-style": (40, "def solve(cap):\n    from ortools.linear_solver import pywraplp\n"
                           "    s = pywraplp.Solver.CreateSolver('GLOP'); x = s.NumVar(0, cap, 'x')\n"
                           "    s.Maximize(2 * x); s.Solve(); return s.Objective().Value()\n", ("ok",)),
    # failing programs
    "syntax": (30, "def f(:\n    pass\n", ("syntax_error",)),
    "import": (20, "import not_a_solver_module\n", ("import_error",)),
    "build": (20, GRB + "x = m.addVar()\nm.addConstr(x <= undefined_name)\nm.optimize()\n", ("model_build_error",)),
    "runtime": (30, GRB + "x = m.addVar(ub=1); m.setObjective(x, -1); m.optimize()\nprint(1 / 0)\n",
                ("runtime_error",)),
    "infeasible": (30, GRB + "x = m.addVar(lb=5); m.addConstr(x <= 2); m.optimize()\n", ("solver_infeasible",)),
    "unbounded": (20, GRB + "m.Params.DualReductions = 0\nx = m.addVar(); m.setObjective(x, -1); m.optimize()\n",
                  ("solver_unbounded",)),
    "no-solve": (20, "total = sum(range(100))\n", ("no_solve_call",)),
    "no-code": (10, "", ("no_code",)),
    # timing out
    "busy-loop": (5, "while True:\n    pass\n", ("timeout_cpu", "timeout_wall")),
    "sleep": (5, "import time\ntime.sleep(600)\n", ("timeout_wall",)),
    "sigterm-ignored": (3, "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
                           "    signal.signal(s, signal.SIG_IGN)\ntime.sleep(600)\n", ("timeout_wall",)),
    # hostile
    "fork-bomb": (4, "import os, time\ntry:\n    while True:\n        os.fork()\nexcept OSError:\n    pass\n"
                     "time.sleep(600)\n", ("timeout_wall", "runtime_error")),
    "memory-bomb": (10, "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n", ("memory_limit",)),
    "output-flood": (10, "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", ("output_limit",)),
    "orphan-daemon": (15, "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                          "        time.sleep(600)\n    os._exit(0)\n" + GRB
                          + "x = m.addVar(ub=3); m.setObjective(x, -1); m.optimize()\n", ("ok",)),
    "zombies": (15, "import os\nfor _ in range(5):\n    if os.fork() == 0:\n        os._exit(0)\n" + GRB
                    + "x = m.addVar(ub=2); m.setObjective(x, -1); m.optimize()\n", ("ok",)),
    "threads": (5, "import threading, time\nts = []\nfor _ in range(10000):\n"
                   "    t = threading.Thread(target=time.sleep, args=(600,), daemon=True); t.start(); ts.append(t)\n",
                ("model_build_error",)),
    "fd-exhaust": (5, "fs = [open('/dev/null') for _ in range(100000)]\n", ("model_build_error",)),
    "big-file": (5, "with open('big.bin', 'wb') as fh:\n    while True:\n        fh.write(b'0' * (1 << 20))\n",
                 ("model_build_error",)),
    "network": (10, "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\n", ("model_build_error",)),
    "read-outside": (10, "print(open('/etc/shadow').read())\n", ("model_build_error",)),
    "write-outside": (10, "open('/usr/lib/owned.txt', 'w').write('x')\n", ("model_build_error",)),
    "env-snoop": (10, "import os\nprint(dict(os.environ))\n", ("no_solve_call",)),
    "spoof": (10, "print('Optimal objective: 42')\nprint('Status: OPTIMAL')\n", ("no_solve_call",)),
    "tamper": (10, GRB + "gp.Model.optimize = lambda self: None\nx = m.addVar(); m.optimize()\n", ("tampered",)),
    "kill-parent": (5, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.killpg(0, signal.SIGKILL)\n",
                    ("model_build_error",)),
}


def corpus(n: int, seed: int = 10_000) -> Iterator[tuple[str, Program]]:
    """(kind, program) pairs, kinds drawn with the fixed weights; generated lazily (10,000 programs of text)."""
    rng = np.random.default_rng(seed)
    names = list(KINDS)
    weights = np.array([KINDS[k][0] for k in names], dtype=float)
    for i, k in enumerate(rng.choice(len(names), size=n, p=weights / weights.sum())):
        kind = names[int(k)]
        code = KINDS[kind][1]
        if code is None:
            code = solver_program(kind, rng)
        entry, args = ("solve", {"cap": int(rng.integers(1, 50))}) if kind == "function-style" else (None, None)
        yield kind, Program(program_id=f"{kind}-{i:05d}", code=code, entry=entry, args=args)


def _proc_table() -> dict[int, tuple[int, str, int, bool]]:
    """pid -> (ppid, state, real uid, is a sandbox worker) of every process visible in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/status") as fh:
                uid = next(int(line.split()[1]) for line in fh if line.startswith("Uid:"))
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            # The worker itself, not the bubblewrap processes whose command lines also name it.
            worker = b"solvers.sandbox.worker" in argv and not argv[0].endswith(b"bwrap")
        except (OSError, StopIteration, ValueError):
            continue
        table[int(entry)] = (int(fields[1]), fields[0], uid, worker)
    return table


def _cgroup_dirs(prefix: str) -> int:
    """Directories named ``prefix*`` anywhere in the cgroup hierarchies (v1 controllers or the v2 tree)."""
    count = 0
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        hits = [d for d in dirs if d.startswith(prefix)]
        count += len(hits)
        dirs[:] = [d for d in dirs if not d.startswith(prefix) and root.count("/") < 7]
    return count


def sample(uids: set[int], done: int, wall_s: float) -> dict:
    me = os.getpid()
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    tree, frontier = [], [me]
    while frontier:
        for child in children.get(frontier.pop(), []):
            tree.append(child)
            frontier.append(child)
    workers = {pid for pid in tree if table[pid][3] and table[pid][2] not in uids}  # this pool's workers only
    with open("/proc/self/status") as fh:
        rss_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    return {"programs": done, "wall_s": round(wall_s, 1), "rss_mb": round(rss_kb / 1024, 1),
            "open_fds": len(os.listdir("/proc/self/fd")), "tree_processes": len(tree),
            "zombies": sum(table[p][1] == "Z" for p in tree),
            "workers": len(workers),
            # A worker forks and locks down its next child ahead of the next program (README: Speed); that child
            # runs under a program uid, so an idle pool holds up to one per worker. Anything else under a program
            # uid outlived its program.
            "prepared_children": sum(uid in uids and ppid in workers for ppid, _, uid, _ in table.values()),
            "stray_program_processes": sum(uid in uids and ppid not in workers for ppid, _, uid, _ in table.values()),
            "cgroup_dirs": _cgroup_dirs(f"flywheel-{me}-")}


def _teardown_pending(c: dict) -> bool:
    return bool(c["zombies"] or c["stray_program_processes"] or c["prepared_children"] > c["workers"])


def settled_sample(uids: set[int], done: int, wall_s: float) -> dict:
    """A checkpoint once the last programs' teardown is over. The pool hands a result back as soon as the program
    reported (its exit and reaping finish off the result's path), so a checkpoint taken the instant a batch ends
    may still see the last program's processes on their way out. Re-sampled every 0.1 s for up to
    ``SETTLE_MAX_S``; what the first look saw is kept (``at_batch_end``) beside how long settling took."""
    first = c = sample(uids, done, wall_s)
    t0 = time.perf_counter()
    while _teardown_pending(c) and time.perf_counter() - t0 < SETTLE_MAX_S:
        time.sleep(0.1)
        c = sample(uids, done, wall_s)
    c["settle_s"] = round(time.perf_counter() - t0, 2)
    if c is not first:
        c["at_batch_end"] = {k: first[k] for k in ("tree_processes", "zombies", "prepared_children",
                                                    "stray_program_processes")}
    return c


def flatness(checkpoints: list[dict], after_close: dict) -> list[str]:
    """The criterion of the module docstring; returns the violations (empty: flat)."""
    bad = []
    growth = checkpoints[-1]["rss_mb"] - checkpoints[0]["rss_mb"]
    if growth > RSS_GROWTH_MAX_MB:
        bad.append(f"parent RSS grew {growth:.1f} MB (> {RSS_GROWTH_MAX_MB} MB)")
    half = max(1, len(checkpoints) // 2)
    for key in ("open_fds", "tree_processes", "workers", "cgroup_dirs"):
        first, second = max(c[key] for c in checkpoints[:half]), max(c[key] for c in checkpoints[half:] or [{key: 0}])
        if second > first:
            bad.append(f"{key} grew: max {first} in the first half, {second} in the second")
    for key in ("zombies", "stray_program_processes"):
        if any(c[key] for c in checkpoints):
            bad.append(f"{key} at checkpoints: {[c[key] for c in checkpoints]}")
    if any(c["prepared_children"] > c["workers"] for c in checkpoints):
        bad.append("more prepared children than live workers: "
                   f"{[(c['prepared_children'], c['workers']) for c in checkpoints]}")
    for key in ("tree_processes", "workers", "zombies", "prepared_children", "stray_program_processes",
                "cgroup_dirs"):
        if after_close[key]:
            bad.append(f"{key} left after the pool closed: {after_close[key]}")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=500, help="programs per batch (one checkpoint after each)")
    ap.add_argument("--workers", type=int, default=None, help="warm workers (default: the cores)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "sandbox_soak.json")
    args = ap.parse_args()
    workers = args.workers or default_workers()
    # Limits small enough that the hostile programs end quickly (timeouts dominate the soak's wall time otherwise);
    # the solver programs take well under a second each.
    config = SandboxConfig(timeout_s=2.0, memory_mb=512, output_limit_bytes=4 << 20, max_file_mb=16,
                           recycle_after=500)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    pool = shared_pool(config, workers)
    uids = set(pool.uids())
    info = machine()
    statuses: Counter[str] = Counter()
    per_kind: dict[str, Counter[str]] = {}
    unexpected: Counter[str] = Counter()
    checkpoints: list[dict] = []
    print(f"soak: {args.programs} programs, {workers} workers, checkpoint every {args.every}")
    print(f"{'programs':>8} {'wall s':>7} {'rss MB':>7} {'fds':>4} {'tree':>5} {'workers':>7} {'zombies':>7} "
          f"{'prepared':>8} {'stray':>5} {'cgroups':>7} {'settle s':>8}")
    stream = corpus(args.programs)
    t0 = time.perf_counter()
    done = 0
    while done < args.programs:
        batch = [next(stream) for _ in range(min(args.every, args.programs - done))]
        for (kind, _), execution in zip(batch, run_batch([p for _, p in batch], config, workers=workers),
                                        strict=True):
            status = str(execution.status)
            statuses[status] += 1
            per_kind.setdefault(kind, Counter())[status] += 1
            if status not in KINDS[kind][2]:
                unexpected[f"{kind}:{status}"] += 1
        done += len(batch)
        c = settled_sample(uids, done, time.perf_counter() - t0)
        checkpoints.append(c)
        print(f"{c['programs']:>8} {c['wall_s']:>7.1f} {c['rss_mb']:>7.1f} {c['open_fds']:>4} {c['tree_processes']:>5} "
              f"{c['workers']:>7} {c['zombies']:>7} {c['prepared_children']:>8} {c['stray_program_processes']:>5} "
              f"{c['cgroup_dirs']:>7} {c['settle_s']:>8.2f}", flush=True)
    wall = time.perf_counter() - t0
    close_pools()
    time.sleep(1.0)  # closed workers' teardown (cgroup removal, reaping) is synchronous; this is only slack
    after = sample(uids, done, time.perf_counter() - t0)
    violations = flatness(checkpoints, after)
    print(f"after close: tree {after['tree_processes']}, zombies {after['zombies']}, program-uid processes "
          f"{after['prepared_children'] + after['stray_program_processes']}, cgroup dirs {after['cgroup_dirs']}")
    settling = [c["programs"] for c in checkpoints if "at_batch_end" in c]
    print(f"checkpoints that waited for the last programs' teardown: {settling or 'none'}")
    print(f"{done} programs in {wall:.0f} s ({done / wall:.1f} programs/s); statuses: {dict(statuses.most_common())}")
    if unexpected:
        print(f"statuses outside a kind's expected set (load-dependent timeouts, for instance): {dict(unexpected)}")
    print("flat: yes" if not violations else "NOT FLAT:\n  " + "\n  ".join(violations))
    result = {
        "programs": done, "workers": workers, "every": args.every, "wall_s": round(wall, 1),
        "programs_per_s": round(done / wall, 2), "config": config.model_dump(mode="json", exclude={"preload"}),
        "statuses": dict(statuses.most_common()), "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "unexpected_statuses": dict(unexpected), "checkpoints": checkpoints, "after_close": after,
        "criterion": {"rss_growth_max_mb": RSS_GROWTH_MAX_MB,
                      "no_growth": ["open_fds", "tree_processes", "workers", "cgroup_dirs"],
                      "zero_at_every_checkpoint": ["zombies", "stray_program_processes"],
                      "at_most_one_per_live_worker": ["prepared_children"],
                      "zero_after_close": ["tree_processes", "workers", "zombies", "prepared_children",
                                           "stray_program_processes", "cgroup_dirs"]},
        "flat": not violations, "violations": violations,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "commit": commit,
        "machine": info | {"load_avg_1m_end": os.getloadavg()[0]},
        "libraries": versions("gurobipy", "pyomo", "highspy", "ortools", "coptpy"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    if violations:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
