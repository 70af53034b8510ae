"""The worker's zygote: it forks the program children, reaps them and reports their exit; a lost zygote costs one
retried program, never a result; and the worker side stays free of the parent's heavy imports (each costs every
program fork and exit time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from solvers.records import ExecStatus
from solvers.sandbox import Pool, Program, SandboxConfig

ROOT = Path(__file__).resolve().parents[1]


def test_worker_side_imports_no_pydantic_records_or_pool() -> None:
    code = ("import sys; import solvers.sandbox.worker; from solvers.sandbox import capture; "
            "capture.load_hook_modules(); heavy = ['pydantic', 'solvers.records', 'solvers.sandbox.pool', 'numpy']; "
            "print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
        out += kids
        todo += kids
    return out


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _zygote(worker_proc_pid: int) -> int:
    """The host pid of a pool worker's zygote: the worker is the python started by bubblewrap (or by the pool), its
    only child the zygote (the program children are the zygote's)."""
    tree = _descendants(worker_proc_pid)
    workers = [worker_proc_pid] if _comm(worker_proc_pid).startswith("python") else [
        p for p in tree if _comm(p).startswith("python") and not _comm(_ppid(p)).startswith("python")]
    assert len(workers) == 1, workers
    zygotes = [p for p in tree if _ppid(p) == workers[0]]
    assert len(zygotes) == 1, zygotes
    return zygotes[0]


def _ns_pid(host_pid: int) -> int:
    """The pid a process has in its own (innermost) pid namespace (bubblewrap gives the sandbox one)."""
    line = next(x for x in Path(f"/proc/{host_pid}/status").read_text().splitlines() if x.startswith("NSpid:"))
    return int(line.split()[-1])


def test_programs_are_children_of_the_zygote_which_reports_their_exit() -> None:
    pool = Pool(SandboxConfig(preload=(), timeout_s=20), 1)
    try:
        first = pool.run(Program(program_id="a", code="import os\nprint(os.getppid())\n"))
        (worker,) = pool._idle
        assert int(first.stdout) == _ns_pid(_zygote(worker.proc.pid))
        # A program that leaves through os._exit: its exit status travels from the zygote, which reaped it.
        second = pool.run(Program(program_id="b", code="import os\nos._exit(3)\n"))
        assert second.status == ExecStatus.RUNTIME_ERROR and "3" in second.error
        third = pool.run(Program(program_id="c", code="print('still here')\n"))
        assert third.stdout == "still here\n" and pool._idle == [worker]  # the same worker throughout
    finally:
        pool.close()


def test_a_killed_zygote_costs_a_retry_not_a_result() -> None:
    pool = Pool(SandboxConfig(preload=(), timeout_s=20), 1)
    try:
        assert pool.run(Program(program_id="warm", code="print(1)\n")).status == ExecStatus.NO_SOLVE_CALL
        (worker,) = pool._idle
        os.kill(_zygote(worker.proc.pid), signal.SIGKILL)
        time.sleep(0.2)
        after = pool.run(Program(program_id="after", code="print('ok')\n"))
        assert after.status == ExecStatus.NO_SOLVE_CALL and after.stdout == "ok\n"
        # The broken worker was replaced; nothing of it is left.
        assert worker not in pool._idle and worker.proc.poll() is not None
        assert not [p for p in _descendants(worker.proc.pid)]
    finally:
        pool.close()


def test_raw_fork_children_get_their_own_random_seed_and_a_sound_interpreter() -> None:
    """The zygote forks through libc, skipping os.fork's interpreter hooks (zygote._raw_fork): the child reseeds
    ``random`` itself, so programs do not share one random sequence, and threads, the main-thread check and
    subprocesses still behave in the program."""
    code = ("import random, subprocess, sys, threading\n"
            "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
            "print(random.random(), threading.current_thread() is threading.main_thread(),\n"
            "      subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True, text=True).stdout.strip())\n")
    pool = Pool(SandboxConfig(preload=(), timeout_s=30), 1)
    try:
        outs = [pool.run(Program(program_id=f"r{i}", code=code)).stdout.split() for i in range(3)]
    finally:
        pool.close()
    assert len({o[0] for o in outs}) == 3, outs  # three programs, three seeds (equal draws: ~1e-16 chance)
    assert all(o[1:] == ["True", "7"] for o in outs), outs
