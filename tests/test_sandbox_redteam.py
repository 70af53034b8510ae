"""Red-team attacks on the sandbox: forging the result channel, spoofing what the solver concluded, escaping the
child. Each case asserts the classification AND that the host was unaffected (no sandboxed process outlived its
program, no file appeared outside the working dir, the pool still runs an honest program correctly).

The forging attacks are the ones a program in the same interpreter as the capture can make: it can reach the
channel's sender (through a hooked method's globals, the frame stack, the garbage collector), poison the capture,
or override what the solver object reports. They must end ``tampered``: either the child sees the misuse and says so
at once, or the worker finds that the captured numbers contradict the captured model (solvers/sandbox/verify/).
"""

from __future__ import annotations

import ast
import os
import struct
from pathlib import Path

import pytest
from test_sandbox_adversarial import GOOD, sandbox_processes

from solvers.records import ExecStatus
from solvers.sandbox import Pool, Program, SandboxConfig
from solvers.sandbox.channel import make_sender, parse_frames, sign
from solvers.sandbox.verify import check_record, verify_solves

# Short limits: three cases run into them on purpose.
CONFIG = SandboxConfig(timeout_s=4, cpu_s=2, memory_mb=384, max_pids=32, output_limit_bytes=2**20,
                       preload=("gurobipy", "highspy"))
HOST_MARKERS = [Path("/tmp/flywheel-redteam-daemon"), Path("/dev/shm/flywheel-redteam"),
                Path(__file__).resolve().parent.parent / "redteam-written"]

FORGED = ("{'type': 'solve', 'record': {'api': 'gurobipy', 'solver': 'gurobi', 'solver_version': '12', "
          "'status': 'optimal', 'objective': 42.0, 'bound': 42.0, 'mip_gap': 0.0, 'solution': {'x': 42.0}, "
          "'n_vars': 1, 'n_int_vars': 0, 'n_bin_vars': 0, 'n_constraints': 0, 'solve_time_s': 0.01, "
          "'model_mps': None, 'sense': 'maximize'}}")
DONE = "{'type': 'done', 'outcome': 'finished', 'tamper': [], 'exec_s': 0.01}"
FORGE_AND_LEAVE = f"send({FORGED}); send({DONE})\nimport os; os._exit(0)\n"

FORGERIES = {
    # the sender, reached through a hooked method's module globals (no audited event on the way)
    "sender_via_hook_globals": GOOD + "send = gp.Model.optimize.__globals__['_state']['sink'].send\n"
    + FORGE_AND_LEAVE,
    # the sink itself (the capture's counter), fed a record of the program's own
    "sink_via_hook_globals": GOOD + f"gp.Model.optimize.__globals__['_state']['sink']({FORGED}['record'])\n",
    # the sender, found by walking up the frame stack from the program
    "sender_via_frames": GOOD + "import sys\nf = sys._getframe()\nwhile 'send' not in f.f_locals:\n    f = f.f_back\n"
    "send = f.f_locals['send']\n" + FORGE_AND_LEAVE,
    # the sender, found by the garbage collector
    "sender_via_gc": GOOD + "import gc\nsend = next(o for o in gc.get_objects() if getattr(o, '__name__', '') == 'send'"
    " and getattr(o, '__closure__', None))\n" + FORGE_AND_LEAVE,
    # the raw key and descriptor out of the sender's closure (named through __code__), frames signed by hand
    "key_via_closure_code": GOOD + f"""
import hashlib, json, struct, os
send = gp.Model.optimize.__globals__['_state']['sink'].send
cells = dict(zip(send.__code__.co_freevars, (c.cell_contents for c in send.__closure__)))
for msg in ({FORGED}, {DONE}):
    p = json.dumps(msg).encode()
    os.write(cells['fd'], struct.pack('>I', len(p)) + hashlib.blake2b(p, key=cells['key'], digest_size=32).digest() + p)
os._exit(0)
""",
    # ... or told apart by type (no audited __code__ read): the forged record carries no model, and a gurobipy solve
    # captured with MPS export on always has one
    "key_via_closure_cells": GOOD + f"""
import hashlib, json, struct, os
vals = [c.cell_contents for c in gp.Model.optimize.__globals__['_state']['sink'].send.__closure__]
key, fd = next(v for v in vals if isinstance(v, bytes)), next(v for v in vals if isinstance(v, int))
for msg in ({FORGED}, {DONE}):
    p = json.dumps(msg).encode()
    os.write(fd, struct.pack('>I', len(p)) + hashlib.blake2b(p, key=key, digest_size=32).digest() + p)
os._exit(0)
""",
    # the hook's describer swapped in its closure cell: the genuine wrapper path sends a record without a model
    "describer_swapped_in_closure": """
import gurobipy as gp
cells = [c for c in gp.Model.optimize.__closure__ if getattr(c.cell_contents, '__name__', '') == '_describe']
real = cells[0].cell_contents
def fake(args, kwargs, result):
    d = real(args, kwargs, result)
    d.objective, d.model_mps = 42.0, None
    return d
cells[0].cell_contents = fake
""" + GOOD.replace("import gurobipy as gp\n", ""),
    # hooks left in place, the record builder poisoned: the real solve runs, its record claims 42
    "poisoned_record_builder": "import gurobipy as gp\ng = gp.Model.optimize.__globals__\nreal = g['_to_record']\n"
    "g['_to_record'] = lambda api, d, el: real(api, d, el) | {'objective': 42.0}\n" + GOOD,
    # a Model subclass whose ObjVal lies
    "subclass_overrides_objval": GOOD.replace("m = gp.Model()", "class M(gp.Model):\n    ObjVal = 42.0\nm = M()"),
    # ... and whose solution lies too, consistently with the lie (x = 14, 3x = 42), outside x's bounds
    "subclass_fakes_the_point": GOOD.replace("m = gp.Model()", "class M(gp.Model):\n    ObjVal = 42.0\n"
                                            "    def getAttr(self, name, objs=None):\n"
                                            "        return [14.0, 0.0] if name == 'X' else super().getAttr(name, objs)\n"
                                            "m = M()"),
    # the sandbox's /proc/self/mem (key in memory) and the worker's memory
    "proc_mem": "import os\nfor p in ('/proc/self/mem', f'/proc/{os.getppid()}/mem'):\n    try:\n"
    "        os.close(os.open(p, os.O_RDONLY))\n    except OSError:\n        pass\n" + GOOD,
    # every frame of another thread (the worker's stack lives on in the child)
    "current_frames": "import sys\nsys._current_frames()\n" + GOOD,
    # garbage on every descriptor from a grandchild, while the program is still running
    "grandchild_scribbles_on_channel": GOOD + """
import os, time
if os.fork() == 0:
    for fd in range(3, 10000):
        try:
            os.write(fd, b'\\x00\\x00\\x00\\x05' + b'z' * 40)
        except OSError:
            pass
    os._exit(0)
time.sleep(1)
""",
}


@pytest.fixture(scope="module")
def pool():
    p = Pool(CONFIG, workers=1)
    yield p
    p.close()


def run(pool: Pool, code: str):
    """Run an attack, then check the host: no survivor, no file outside, an honest program still gets 14."""
    e = pool.run(Program(program_id="redteam", code=code))
    assert not sandbox_processes(pool), "a sandboxed process outlived its program"
    assert not [m for m in HOST_MARKERS if m.exists()], "the program wrote outside its working dir"
    after = pool.run(Program(program_id="after", code=GOOD))
    assert after.status == ExecStatus.OK and after.objective == 14.0, (after.status, after.error)
    return e


@pytest.mark.parametrize("attack", sorted(FORGERIES))
def test_forging_the_result_is_tampered(pool: Pool, attack: str) -> None:
    e = run(pool, FORGERIES[attack])
    assert e.status == ExecStatus.TAMPERED, (attack, e.status, e.error, e.stderr[-400:])


# attack -> (program, expected status, objective the execution must report (None: no believed solve))
OTHERS = {
    # a solve through highspy's C class (bypassing the hook) is simply not captured; its print is not believed
    "unhooked_c_api": ("import highspy\nh = highspy.Highs()\nh.addVar(0, 4)\nh.changeColCost(0, -3.0)\n"
                       "highspy._core._Highs.run(h)\nprint('Optimal objective: 42')\n", ExecStatus.NO_SOLVE_CALL, None),
    # the solver package executed again from disk as a fresh module: its import replaces sys.modules' entry
    "solver_module_reexecuted": ("import importlib.util\nspec = importlib.util.find_spec('gurobipy')\n"
                                 "gp = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(gp)\n"
                                 + GOOD.replace("import gurobipy as gp\n", ""), ExecStatus.TAMPERED, 14.0),
    # ... or after the real import: the fresh copy's Model is the same hooked C class, so the solve is captured
    "solver_module_reexecuted_after_import": ("import gurobipy, importlib.util\n"
                                              "spec = importlib.util.find_spec('gurobipy')\n"
                                              "gp = importlib.util.module_from_spec(spec)\n"
                                              "spec.loader.exec_module(gp)\n"
                                              + GOOD.replace("import gurobipy as gp\n", ""), ExecStatus.OK, 14.0),
    "builtins_replaced": ("import builtins\nbuiltins.open = None\nbuiltins.print = lambda *a, **k: None\n" + GOOD,
                          ExecStatus.OK, 14.0),
    "os_exit_after_the_solve": (GOOD + "import os\nos._exit(0)\n", ExecStatus.OK, 14.0),
    "base_exception_subclass_and_atexit_exit": (GOOD + "import atexit, sys\natexit.register(lambda: sys.exit(0))\n"
                                                "class Evil(BaseException):\n    pass\nraise Evil('boom')\n",
                                                ExecStatus.RUNTIME_ERROR, 14.0),
    # a daemon (double fork + setsid) that would write to /tmp for 20 s: killed with the program's cgroup
    "double_fork_daemon": (GOOD + """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(200):
            try:
                open('/tmp/flywheel-redteam-daemon', 'w').write(str(i))
            except OSError:
                pass
            time.sleep(0.1)
    os._exit(0)
""", ExecStatus.OK, 14.0),
    # RLIMIT_FSIZE: named as the sandbox's limit (EFBIG), not as the model's error (tests/test_sandbox_limits.py)
    "sparse_giant_file": ("with open('big.bin', 'wb') as fh:\n    fh.seek(50 * 2**30)\n    fh.write(b'x')\n",
                          ExecStatus.OUTPUT_LIMIT, None),
    "decompression_bomb": ("import zlib\nd = zlib.compress(bytes(2**24))\nwith open('o.bin', 'wb') as fh:\n"
                           "    for _ in range(100):\n        fh.write(zlib.decompress(d))\n",
                           ExecStatus.OUTPUT_LIMIT, None),
    "fd_exhaustion": ("fs = []\nwhile True:\n    fs.append(open('/dev/null'))\n", ExecStatus.MODEL_BUILD_ERROR, None),
    "sigstop_itself": (GOOD + "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n", ExecStatus.TIMEOUT_WALL,
                       14.0),
}


@pytest.mark.parametrize("attack", sorted(OTHERS))
def test_other_attacks(pool: Pool, attack: str) -> None:
    code, status, objective = OTHERS[attack]
    e = run(pool, code)
    assert e.status == status, (attack, e.status, e.error, e.stderr[-400:])
    assert e.objective == objective and "42" not in str([s.objective for s in e.solves])


def test_cpu_burnt_inside_c_is_stopped(pool: Pool) -> None:
    # catastrophic regex backtracking: no bytecode boundary for Python to stop at, only the kernel's limits
    e = run(pool, "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')\n")
    assert e.status in (ExecStatus.TIMEOUT_CPU, ExecStatus.TIMEOUT_WALL), e.error  # which one depends on load
    assert e.wall_s < CONFIG.timeout_s + 10  # the limit plus kill latency on a loaded machine


def test_privileged_syscalls_and_host_channels_are_refused(pool: Pool) -> None:
    code = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
calls = {'io_uring_setup': (425, 8, 0), 'personality': (135, 0x0040000), 'keyctl': (250, 0, 0), 'bpf': (321, 0, 0, 0),
         'unshare': (272, 0x10000000), 'setns': (308, 0, 0), 'ptrace': (101, 0, 0, 0, 0), 'mount': (165, 0, 0, 0, 0, 0),
         'process_vm_readv': (310, os.getppid(), 0, 0, 0, 0, 0), 'pidfd_getfd': (438, 0, 0, 0), 'kcmp': (312, 1, 1, 0, 0, 0)}
out = {name: (libc.syscall(*args), ctypes.get_errno()) for name, args in calls.items()}
for name in ('\\0/tmp/.X11-unix/X0', '\\0flywheel'):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(name); out[name[1:]] = 'connected'
    except OSError as e:
        out[name[1:]] = type(e).__name__
    s.close()
for path in ('/dev/shm/flywheel-redteam', '/etc/passwd-flywheel'):
    try:
        open(path, 'w').write('x'); out[path] = 'written'
    except OSError as e:
        out[path] = type(e).__name__
os.symlink('/etc/shadow', 'shadow')
try:
    open('shadow').read(); out['shadow'] = 'read'
except OSError as e:
    out['shadow'] = type(e).__name__
out['fds'] = sorted(map(int, os.listdir('/proc/self/fd')))
print(repr(out))
"""
    e = run(pool, code)
    assert e.status == ExecStatus.NO_SOLVE_CALL, e.error
    out = ast.literal_eval(e.stdout.strip().splitlines()[-1])
    refused = [k for k in ("io_uring_setup", "personality", "keyctl", "bpf", "unshare", "setns", "ptrace", "mount",
                           "process_vm_readv", "pidfd_getfd", "kcmp") if out[k] == (-1, 1)]  # -1 / EPERM
    assert len(refused) == 11, out
    # /dev/shm is the worker's private tmpfs under bubblewrap (multiprocessing needs it; emptied after each program):
    # a write may land there, never on the host's
    shm = out.pop("/dev/shm/flywheel-redteam")
    assert shm != "written" or "bwrap" in e.isolation, out
    assert not os.path.exists("/dev/shm/flywheel-redteam")
    assert "connected" not in out.values() and "written" not in out.values() and out["shadow"] != "read", out
    # stdin/out/err, the hidden channel, and listdir's own descriptor: nothing inherited from the worker
    assert len(out["fds"]) <= 5, out["fds"]


def test_verify_solves_checks_a_real_record_against_its_own_model(pool: Pool) -> None:
    e = pool.run(Program(program_id="honest", code=GOOD))
    record = e.solves[0].model_dump(mode="json")
    assert record["model_mps"] and record["objective"] == 14.0
    honest = verify_solves([record])
    assert honest.checked == 1 and not honest.problems
    assert verify_solves([record | {"objective": 14.5}]).problems  # off by far more than any solver tolerance
    assert verify_solves([record | {"solution": {"x": 4.0, "y": 1.5}, "objective": 15.0}]).problems  # y integer
    assert verify_solves([record | {"solution": {"x": 5.0, "y": 0.0}, "objective": 15.0}]).problems  # x <= 4
    assert verify_solves([record | {"solution": {"x": 4.0, "y": 3.0}, "objective": 18.0}]).problems  # x + y <= 5
    no_model = verify_solves([record | {"model_mps": None, "objective": 42.0}])
    assert no_model.skipped == 1 and not no_model.problems  # export off: unverifiable, not accused
    assert verify_solves([record | {"model_mps": None}], models_expected=True).problems  # export on: forged
    # a model its capture could not write (a quadratic MathOpt model) is not accused; OR-Tools' linear solver always
    # exports one
    assert not verify_solves([record | {"api": "ortools", "model_mps": None,
                                        "verify": {"kind": "ortools.mathopt", "linear": False}}],
                             models_expected=True).problems
    assert verify_solves([record | {"api": "ortools", "model_mps": None, "verify": {"kind": "ortools.linear_solver"}}],
                         models_expected=True).problems
    assert verify_solves([{"status": "optimal", "objective": 42.0}]).problems  # not a record the capture built


def test_channel_rejects_foreign_callers_and_non_object_frames(tmp_path: Path) -> None:
    r, w = os.pipe()
    trusted_send = make_sender(w, b"k" * 32, frozenset({test_channel_rejects_foreign_callers_and_non_object_frames
                                                        .__code__}))
    trusted_send({"type": "ready"})
    (lambda: trusted_send({"type": "solve", "record": {}}))()  # called from other code: becomes an alarm
    os.close(w)
    data = os.read(r, 1 << 16)
    os.close(r)
    messages, error = parse_frames(data, b"k" * 32)
    assert error is None and [m["type"] for m in messages] == ["ready", "tamper"]
    payload = b"[1, 2]"  # valid signature, but not a message object
    frame = struct.pack(">I", len(payload)) + sign(b"k" * 32, payload) + payload
    assert parse_frames(frame, b"k" * 32)[1] == "malformed message on the result channel"


def test_verify_matches_pyomo_symbolic_labels_and_fixed_columns() -> None:
    # pyomo writes x[1,2] as x(1_2) and a constant objective term as a column fixed at 1 that no solution names
    mps = """NAME pyomo
ROWS
 N obj
 L c1
COLUMNS
 x(1_2) obj 1 c1 1
 ONE_VAR_CONSTANT obj 2
RHS
 rhs c1 3
BOUNDS
 UP bnd x(1_2) 3
 FX bnd ONE_VAR_CONSTANT 1
ENDATA
"""
    assert check_record(mps, {"x[1,2]": 3.0}, 5.0, "maximize") == ""
    assert "claimed objective 6" in (check_record(mps, {"x[1,2]": 3.0}, 6.0, "maximize") or "")
    assert check_record(mps, {"y": 3.0}, 5.0, "maximize") is None  # nothing names x: unverifiable, not accused


# A forger holding the key signs records of the kinds that used to carry no model (OR-Tools, pyomo) or claims
# "infeasible" for a feasible model it exports itself: the parent requires the model each hook promises, and
# re-solves small no-solution claims (solvers/sandbox/verify/).
SIGN_WITH_STOLEN_KEY = GOOD + """
import hashlib, json, struct, os
vals = [c.cell_contents for c in gp.Model.optimize.__globals__['_state']['sink'].send.__closure__]
key, fd = next(v for v in vals if isinstance(v, bytes)), next(v for v in vals if isinstance(v, int))
m.write('own.mps')
record = {FORGED}['record'] | {CHANGES}
for msg in ({{'type': 'solve', 'record': record}}, {DONE}):
    p = json.dumps(msg).encode()
    os.write(fd, struct.pack('>I', len(p)) + hashlib.blake2b(p, key=key, digest_size=32).digest() + p)
os._exit(0)
"""
SIGNED_FORGERIES = {
    "ortools_without_kind": "{'api': 'ortools'}",
    "pywraplp_without_model": "{'api': 'ortools', 'verify': {'kind': 'ortools.linear_solver'}}",
    "cp_sat_without_model": "{'api': 'ortools', 'verify': {'kind': 'ortools.cp_sat'}}",
    "linear_pyomo_without_model": "{'api': 'pyomo', 'verify': {'kind': 'pyomo', 'linear': True}}",
    "infeasible_claim_for_a_feasible_model": "{'status': 'infeasible', 'objective': None, 'solution': {}, "
                                             "'model_mps': open('own.mps').read()}",
}


@pytest.mark.parametrize("attack", sorted(SIGNED_FORGERIES))
def test_signed_records_must_carry_the_model_their_hook_promises(pool: Pool, attack: str) -> None:
    code = SIGN_WITH_STOLEN_KEY.format(FORGED=FORGED, DONE=DONE, CHANGES=SIGNED_FORGERIES[attack])
    e = run(pool, code)
    assert e.status == ExecStatus.TAMPERED, (attack, e.status, e.error, e.stderr[-400:])
    assert "contradicts its own model" in e.error, e.error  # caught by the parent's check, not by an alarm
