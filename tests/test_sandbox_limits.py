"""A program stopped or refused by one of the sandbox's own rules gets the status of that rule, before or after a
solve, decided from the signal, the errno and the sandbox's counters; a model's own error stays a model error.

Real programs in the real sandbox (cgroups where this machine has them, seccomp, rlimits, no network)."""

from __future__ import annotations

import errno

import pytest

from solvers.failures import classify_failure, exec_failure
from solvers.records import ExecStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.classify import Observed, classify

# A solve that succeeds: the "after a solve" variants prepend it, so the limit is hit with a solve already recorded.
SOLVE = """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, 4, "x")
s.Maximize(x)
assert s.Solve() == s.OPTIMAL
"""
LIMITS: dict[str, tuple[str, ExecStatus]] = {
    # RLIMIT_FSIZE (1 MiB here): CPython ignores SIGXFSZ, so the write fails with EFBIG
    "file too large": ("with open('big.bin', 'wb') as fh:\n    fh.write(b'x' * (4 << 20))\n",
                       ExecStatus.OUTPUT_LIMIT),
    # RLIMIT_NPROC / pids.max (16 here): CPython's "can't start new thread"
    "threads": ("import threading, time\nfor _ in range(100):\n"
                "    threading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n",
                ExecStatus.PROCESS_LIMIT),
    # fork beyond the cap: BlockingIOError (EAGAIN) right after os.fork was attempted
    "fork": ("import os, time\nfor _ in range(100):\n    if os.fork() == 0:\n        time.sleep(3)\n"
             "        os._exit(0)\n", ExecStatus.PROCESS_LIMIT),
    "subprocess": ("import subprocess\nkids = [subprocess.Popen(['sleep', '3']) for _ in range(100)]\n",
                   ExecStatus.PROCESS_LIMIT),
    # seccomp refuses AF_INET sockets with EPERM
    "socket": ("import socket\nsocket.create_connection(('127.0.0.1', 80), timeout=1)\n", ExecStatus.DENIED),
    # no network: a name cannot be resolved (urllib wraps the error in URLError)
    "http": ("import urllib.request\nurllib.request.urlopen('http://example.com/', timeout=2)\n", ExecStatus.DENIED),
    # a refused system call: ptrace(PTRACE_TRACEME) through ctypes answers EPERM
    "ptrace": ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "if libc.ptrace(0, 0, 0, 0) != 0:\n    n = ctypes.get_errno()\n    raise OSError(n, os.strerror(n))\n",
               ExecStatus.DENIED),
}
# A model's own errors, some of them OSErrors: unchanged (model_build_error before a solve, runtime_error after).
MODEL_ERRORS = {
    "missing data file": "open('capacities.csv').read()\n",
    "key error": "demand = {'a': 1}\nprint(demand['b'])\n",
    "non-blocking read": "raise BlockingIOError(errno.EAGAIN, 'no data yet')\n",  # EAGAIN without a fork: not a cap
}
CONFIG = SandboxConfig(timeout_s=15, memory_mb=512, max_pids=16, max_file_mb=1, preload=("ortools",))


def _programs() -> list[Program]:
    progs = []
    for name, (code, _) in LIMITS.items():
        progs.append(Program(program_id=f"before:{name}", code=code))
        progs.append(Program(program_id=f"after:{name}", code=SOLVE + code))
    for name, code in MODEL_ERRORS.items():
        progs.append(Program(program_id=f"before:{name}", code="import errno\n" + code))
        progs.append(Program(program_id=f"after:{name}", code="import errno\n" + SOLVE + code))
    return progs


@pytest.fixture(scope="module")
def executions() -> dict[str, object]:
    return {e.program_id: e for e in run_batch(_programs(), CONFIG)}


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("name", list(LIMITS))
def test_a_sandbox_limit_is_named_whether_or_not_a_solve_happened(executions: dict, name: str, when: str) -> None:
    e = executions[f"{when}:{name}"]
    expected = LIMITS[name][1]
    assert e.status == expected, (e.error, e.stderr[-600:])
    assert (len(e.solves) == 1) == (when == "after")
    assert exec_failure(e.status) == "limit"  # never counted as a modelling error
    assert classify_failure({"exec_status": e.status.value, "verdicts": {}}) == ("limit", e.status.value)


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("name", list(MODEL_ERRORS))
def test_a_model_error_stays_a_model_error(executions: dict, name: str, when: str) -> None:
    e = executions[f"{when}:{name}"]
    expected = ExecStatus.MODEL_BUILD_ERROR if when == "before" else ExecStatus.RUNTIME_ERROR
    assert e.status == expected, (e.error, e.stderr[-600:])
    assert exec_failure(e.status) == "code"


BASE = dict(exit_code=0, term_signal=None, timed_out=False, output_flood=False, oom_kills=0, cpu_s=0.1, cpu_limit=5,
            channel_error=None)


def _obs(done: dict, **kw: object) -> Observed:
    return Observed(messages=[{"type": "ready"}, {"type": "done", **done}], **(BASE | kw))


def test_signals_and_counters_decide() -> None:
    """The signal (SIGXFSZ, SIGSYS) and the cgroup's pids.max counter decide where no exception says why."""
    import signal

    died = dict(exit_code=None)
    assert classify(Observed(messages=[{"type": "ready"}], **(BASE | died | {"term_signal": signal.SIGXFSZ})))[0] \
        == ExecStatus.OUTPUT_LIMIT
    assert classify(Observed(messages=[{"type": "ready"}], **(BASE | died | {"term_signal": signal.SIGSYS})))[0] \
        == ExecStatus.DENIED
    assert classify(Observed(messages=[{"type": "ready"}], **(BASE | {"exit_code": 1, "pids_max_hits": 2})))[0] \
        == ExecStatus.PROCESS_LIMIT
    assert classify(Observed(messages=[{"type": "ready"}], **(BASE | {"exit_code": 1})))[0] == \
        ExecStatus.RUNTIME_ERROR
    # EAGAIN from a C library's fork (no audit event) counts only with the counter's evidence
    eagain = {"outcome": "exception", "kind": "runtime", "errno": errno.EAGAIN, "message": "BlockingIOError"}
    assert classify(_obs(eagain, pids_max_hits=1))[0] == ExecStatus.PROCESS_LIMIT
    assert classify(_obs(eagain))[0] == ExecStatus.MODEL_BUILD_ERROR
