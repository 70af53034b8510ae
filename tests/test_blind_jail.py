"""User contract files run where the answer does not exist (issue 18): a hostile user file, loaded through the CLI
against a real store, tries every way to the ground truth - the store's Parquet and DuckDB files, the parent's
environment, a server on 127.0.0.1 that would hand it over, /proc of other processes, frame walks and the garbage
collector - from module-level code, a repair and a plain check, and an answer-aware check (which is given the answer)
tries to pass it on to them. Each attack is first shown to work in the parent, where the answer exists."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts import blind
from contracts.engine import run_suite
from contracts.suites import Suite, load_contract_file
from contracts.testing import make_sample
from flywheel.generators.testing import problem_with_truth
from solvers.render import render

# Not a real answer: a value no program computes, planted as the ground-truth objective, so that finding it
# anywhere means the ground truth was reached (the candidate's own execution reports a different objective).
CANARY = 98765.4321

ATTACK = r'''
import gc, glob, inspect, json, os, socket, sys, urllib.request
from contracts import Repair, Verdict, contract

STORE, URL, CANARY = {store!r}, {url!r}, {canary!r}
STASH = []  # what the answer-aware check puts here, a repair in the same module would read

def _has(text):
    return str(CANARY) in str(text)

def probe_store():
    files = glob.glob(STORE + "/**/*.parquet", recursive=True) + glob.glob(STORE + "/**/*.duckdb", recursive=True)
    if not files:
        return "no store files" if not os.path.exists(STORE) else "store visible, no files"
    try:
        import duckdb
        rows = duckdb.sql("select * from read_parquet(%r, union_by_name=true)" % [f for f in files
                                                                              if f.endswith(".parquet")]).fetchall()
        return "FOUND in parquet" if _has(rows) else "read %d rows, no answer" % len(rows)
    except Exception as exc:
        return "store unreadable: %s" % type(exc).__name__

def probe_env():
    return "FOUND in env" if _has(dict(os.environ)) else "env: %s" % sorted(os.environ)

def probe_net():
    try:
        return "FOUND over http" if _has(urllib.request.urlopen(URL, timeout=3).read().decode()) else "http: no answer"
    except Exception as exc:
        return "net refused: %s" % type(exc).__name__

def probe_proc():
    seen = 0
    for d in glob.glob("/proc/[0-9]*"):
        for name in ("environ", "cmdline"):
            try:
                with open(d + "/" + name, "rb") as f:
                    if _has(f.read().decode(errors="replace")):
                        return "FOUND in " + d + "/" + name
                seen += 1
            except OSError:
                pass
    return "proc: %d files, no answer" % seen

def probe_memory():
    def truth_of(obj):
        for holder in (obj, getattr(obj, "problem", None)):
            gt = getattr(holder, "ground_truth", None) if holder is not None else None
            if gt is not None and getattr(gt, "objective", None) == CANARY:
                return gt.objective
        return None
    frame = sys._getframe()
    while frame is not None:
        for v in list(frame.f_locals.values()):
            if truth_of(v) is not None:
                return "FOUND in a frame"
        frame = frame.f_back
    for info in inspect.stack(0):
        for v in list(info.frame.f_locals.values()):
            if truth_of(v) is not None:
                return "FOUND on the stack"
    for obj in gc.get_objects():
        try:
            # a dict holding the canary, other than this attack module's own globals (any copy of it)
            planted = isinstance(obj, dict) and "STASH" not in obj and CANARY in obj.values()
            if truth_of(obj) is not None or planted:
                return "FOUND by gc: %s %s" % (type(obj).__name__, str(obj)[:300] if planted else "")
        except Exception:
            continue
    return "memory: no answer"

def probe_stash():
    found = list(STASH)
    for path in ("/tmp/stash", "/dev/shm/stash", os.path.expanduser("~/stash")):
        try:
            with open(path) as f:
                found.append(f.read())
        except OSError:
            pass
    return "FOUND in the stash" if _has(found) else "stash: empty"

def findings():
    return {{p.__name__: p() for p in (probe_store, probe_env, probe_net, probe_proc, probe_memory, probe_stash)}}

AT_IMPORT = findings()  # module-level code runs wherever the file is executed

@contract(stage="before_execution", severity="repair")
def hunt_repair(sample):
    return Repair(code="# " + json.dumps(findings()) + "\n" + sample.code, kind="hunt")

@contract(stage="after_execution", severity="warn", cost=0.5)
def hunt_check(sample):
    return Verdict.passed("hunted", at_import=AT_IMPORT, now=findings())

@contract(stage="after_execution", severity="warn", cost=0.6, answer_aware=True)
def answer_check(sample, answer):
    got = answer.ground_truth.objective
    STASH.append(got)
    wrote = []
    for path in ("/tmp/stash", "/dev/shm/stash"):
        try:
            with open(path, "w") as f:
                f.write(str(got))
            wrote.append(path)
        except OSError as exc:
            wrote.append(type(exc).__name__)
    ok = got == CANARY
    return Verdict.passed("answer received") if ok else Verdict.failed("no answer", wrote=wrote)
'''


@pytest.fixture()
def answer_server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 that hands the answer to anyone who asks."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.dumps({"objective": CANARY}).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/answer"
    srv.shutdown()


@pytest.fixture()
def attack(tmp_path: Path, answer_server: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A real store holding a problem whose ground truth is the canary, the answer in the parent's environment, and
    the hostile user file that knows where both are."""
    from flywheel.store import Store
    from flywheel.store.rows import attempt_row, execution_row, problem_row, solve_rows

    p = problem_with_truth("production_planning", 2)
    p = p.model_copy(update={"ground_truth": p.ground_truth.model_copy(update={"objective": CANARY})})
    s = make_sample(p, code=render(p.ir, "gurobipy"), attempt_id="cand")
    solve = s.execution.solves[0].model_copy(update={"objective": 17.0})  # the candidate's own (wrong) answer
    s = make_sample(p, code=s.attempt.code, attempt_id="cand", solves=(solve,))
    root = tmp_path / "store"
    with Store.open(root) as st:
        st.write("problems", 0, [problem_row(p)])
        st.write("attempts", 0, [attempt_row(s.attempt)])
        st.write("executions", 0, [execution_row(s.sample_id, s.execution)])
        st.write("solves", 0, list(solve_rows(s.sample_id, s.execution)))
    monkeypatch.setenv("FLYWHEEL_ANSWER", str(CANARY))
    user = tmp_path / "attack.py"
    user.write_text(ATTACK.format(store=str(root), url=answer_server, canary=CANARY))
    return root, user, answer_server


def _parent_findings(user: Path) -> dict[str, str]:
    """The control: the same file's probes run in the parent, with the answer in memory as the engine holds it."""
    text = user.read_text().split("AT_IMPORT =")[0]
    scope: dict[str, object] = {}
    exec(compile(text, str(user), "exec"), scope)  # noqa: S102 - the test runs the attack where it should work
    full = make_sample(problem_with_truth("production_planning", 2))
    full = full.model_copy(update={"problem": full.problem.model_copy(update={
        "ground_truth": full.problem.ground_truth.model_copy(update={"objective": CANARY})})})
    assert full.problem.ground_truth.objective == CANARY  # the engine's caller holds this sample
    return scope["findings"]()  # type: ignore[operator]


def test_attacks_work_in_the_parent(attack: tuple[Path, Path, str]) -> None:
    """Without the jail every route but /proc and the stash reaches the answer (so the test below means something)."""
    _, user, _ = attack
    got = _parent_findings(user)
    for probe in ("probe_store", "probe_env", "probe_net", "probe_memory"):
        assert got[probe].startswith("FOUND"), (probe, got[probe])


@pytest.fixture(params=["bwrap", "no-bwrap"])
def jail_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both jails: bubblewrap (where it works, as here), and the weaker one a host without it gets (a scrubbed
    environment, a private directory, the uid drop, rlimits, a new network namespace and seccomp)."""
    import os

    from solvers.sandbox import pool

    if request.param == "bwrap" and not pool.bwrap_works():
        pytest.skip("bubblewrap cannot create namespaces here")
    if request.param == "no-bwrap":
        if os.geteuid() != 0:
            pytest.skip("the no-bwrap jail drops to another uid only as root")
        monkeypatch.setattr(pool, "bwrap_works", lambda: False)
    from contracts.api import REGISTRY, load_builtins

    load_builtins()  # loaded once per process: a snapshot without them would drop them for every later test
    # The attack file registers its contracts in the parent (as stand-ins) and in the jail's file list (replayed
    # into every new child): one attack file per run, as if each were its own process.
    before, files = dict(REGISTRY), dict(blind._FILES)
    blind.shutdown()
    yield request.param
    blind.shutdown()
    REGISTRY.clear()
    REGISTRY.update(before)
    blind._FILES.clear()
    blind._FILES.update(files)


def test_a_hostile_user_file_never_sees_the_ground_truth(attack: tuple[Path, Path, str], jail_kind: str) -> None:
    from flywheel.cli import app
    from flywheel.store import Store

    root, user, _ = attack
    runner = CliRunner()
    for _ in range(2):  # the second pass: the answer-aware check of the first has had its chance to stash it
        res = runner.invoke(app, ["contracts", "run", "--suite", str(user), "--store", str(root), "--format",
                                  "json"])
        assert res.exit_code == 0, res.output
    with Store.open(root, create=False) as st:
        verdicts = st.query("select contract, outcome, message, evidence from verdicts").to_pylist()
        repairs = st.query("select after from repairs").to_pylist()
    by = {v["contract"]: v for v in verdicts}
    # the answer-aware check was handed the answer, explicitly
    assert by["answer_check"]["outcome"] == "pass" and by["answer_check"]["message"] == "answer received"
    # ... and nothing that ran in the blind process found it: at import, in a repair, in a check
    evidence = json.loads(by["hunt_check"]["evidence"])
    in_repairs = [("repair", json.loads(r["after"].splitlines()[0][2:])) for r in repairs]
    assert in_repairs  # the same findings in both passes make the same (idempotent) repair row
    iso = blind.isolation("blind").split("+")
    # Without bubblewrap, as root, the jail builds bubblewrap's mount plan itself (a mount namespace, a tmpfs root,
    # read-only binds, chroot) and then drops the uid: the store does not exist in there. Only where no mount
    # namespace can be made and the interpreter is not world-traversable can the jail read host files, as jail.py
    # and `flywheel sandbox doctor` say; that probe is then the weaker jail's known limit.
    store_hidden = jail_kind == "bwrap" or "uid" in iso or "mountns" in iso
    for where, found in [("import", evidence["at_import"]), ("check", evidence["now"]), *in_repairs]:
        leaks = {k: v for k, v in found.items() if v.startswith("FOUND") and (store_hidden or k != "probe_store")}
        assert not leaks, (where, found)
        if store_hidden:
            assert found["probe_store"] == "no store files"
        assert "FLYWHEEL_ANSWER" not in found["probe_env"]
        if jail_kind == "bwrap":
            assert found["probe_env"] == "env: ['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE']"
        assert found["probe_net"].startswith("net refused")
    for row in verdicts + repairs:
        assert str(CANARY) not in json.dumps(row), row
    if jail_kind == "bwrap":
        assert "+".join(iso).startswith("bwrap+netns+pidns+ro-system+tmpfs+uid+rlimits+seccomp")
    else:
        assert iso[:2] == ["process", "clean-env"] and {"rlimits", "seccomp"} <= set(iso)
        if _can_unshare_mounts():  # root with CAP_SYS_ADMIN, as here: the private root and the uid drop
            assert {"mountns", "ro-system", "tmpfs", "uid", "netns"} <= set(iso), iso


def test_answer_aware_checks_get_the_answer_and_nothing_else_does(tmp_path: Path) -> None:
    """The explicit argument: an answer-aware user check gets the ``Answer``; a plain one gets the blind view (with
    the candidate's execution), and reading the ground truth there is a contract error, not a leak."""
    user = tmp_path / "aware.py"
    user.write_text(
        "from contracts import Verdict, contract\n\n\n"
        "@contract(stage='after_execution', severity='reject', answer_aware=True, rtol=1e-6)\n"
        "def objective_close(sample, answer, rtol):\n"
        "    want, got = answer.ground_truth.objective, sample.execution.final_solve.objective\n"
        "    ok = abs(got - want) <= rtol * (abs(want) + 1)\n"
        "    return Verdict.passed('close') if ok else Verdict.failed(f'{got:g} vs {want:g}')\n\n\n"
        "@contract(stage='after_execution', severity='warn')\n"
        "def peeks(sample):\n"
        "    return Verdict.passed(str(sample.problem.ground_truth))\n")
    _, defined = load_contract_file(user)
    assert {c.name: c.answer_aware for c in defined} == {"objective_close": True, "peeks": False}
    p = problem_with_truth("production_planning", 2)
    good = make_sample(p, attempt_id="good")
    wrong = make_sample(p, attempt_id="wrong", solves=(good.execution.solves[0].model_copy(
        update={"objective": p.ground_truth.objective + 5}),))
    report = run_suite(Suite(name="u", contracts=tuple(defined)), [good, wrong])
    rows = {(v.sample_id, v.contract): v for v in report.verdicts}
    assert rows[("good", "objective_close")].outcome == "pass"
    assert rows[("wrong", "objective_close")].outcome == "fail"
    assert report.results[1].status == "rejected" and report.results[1].rejected_by == "objective_close"
    assert rows[("good", "peeks")].outcome == "contract_error" and "ground_truth" in rows[("good", "peeks")].message
    with pytest.raises(Exception, match="only in the blind process"):
        defined[0].fn(good)  # the parent holds a stand-in, never the user's code


def test_a_user_file_loads_only_in_the_blind_process(tmp_path: Path) -> None:
    """Module-level code of a user file never runs in the parent; load errors still name the file."""
    marker = tmp_path / "ran_in_parent"
    user = tmp_path / "side_effect.py"
    user.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    with pytest.raises(Exception, match="side_effect.py"):  # writing is refused in there, and the error names it
        load_contract_file(user)
    assert not marker.exists()
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_module_here\n")
    with pytest.raises(Exception, match=r"bad.py.*ModuleNotFoundError"):
        load_contract_file(bad)


def test_a_contract_that_allocates_too_much_gets_memory_error_and_the_next_call_works(tmp_path: Path) -> None:
    """RLIMIT_AS in the jail: a user check asking for more than ``jail.MEMORY_BYTES`` is a contract error, not the
    host's memory; the warm child stays usable."""
    from contracts import jail

    user = tmp_path / "hungry.py"
    user.write_text(
        "from contracts import Verdict, contract\n\n\n"
        "@contract(stage='after_execution', severity='warn')\n"
        f"def hungry(sample):\n    return Verdict.passed(str(len(bytearray({jail.MEMORY_BYTES + (1 << 30)}))))\n\n\n"
        "@contract(stage='after_execution', severity='warn')\n"
        "def modest(sample):\n    return Verdict.passed(str(len(bytearray(1 << 20))))\n")
    _, defined = load_contract_file(user)
    sample = make_sample(problem_with_truth("production_planning", 2), attempt_id="s")
    report = run_suite(Suite(name="u", contracts=tuple(defined)), [sample])
    rows = {v.contract: v for v in report.verdicts}
    assert rows["hungry"].outcome == "contract_error" and "MemoryError" in rows["hungry"].message
    assert rows["modest"].outcome == "pass" and rows["modest"].message == str(1 << 20)


def _can_unshare_mounts() -> bool:
    """Can a child of this process make a mount namespace (root with CAP_SYS_ADMIN)? Probed in a throwaway child."""
    import os
    import subprocess
    import sys

    if os.geteuid() != 0:
        return False
    code = "import ctypes, sys; sys.exit(ctypes.CDLL(None, use_errno=True).unshare(0x00020000) != 0)"
    return subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0


def test_a_package_under_tmp_is_visible_in_the_private_root(tmp_path: Path) -> None:
    """A checkout or virtualenv under /tmp (CI clones there) is bound inside the jail's empty /tmp: the jail used
    to bind it first and then fail to make /tmp (``FileExistsError``), so no contract process started."""
    import subprocess
    import sys

    if not _can_unshare_mounts():
        pytest.skip("needs root with CAP_SYS_ADMIN (a mount namespace)")
    pkg = Path("/tmp") / f"flywheel-jail-probe-{tmp_path.name}"
    pkg.mkdir(exist_ok=True)
    (pkg / "marker.txt").write_text("here")
    work = tmp_path / "root"
    work.mkdir()
    code = (
        "import ctypes, os, sys\n"
        "from contracts import jail\n"
        "from solvers.sandbox import pool\n"
        f"pool._repo_paths = lambda: [{str(pkg)!r}]\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.unshare(jail.CLONE_NEWNS) == 0\n"
        f"os.chdir({str(work)!r})\n"
        "assert jail._private_root(libc)\n"
        f"print(open({str(pkg / 'marker.txt')!r}).read(), oct(os.stat('/tmp').st_mode & 0o7777))\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             cwd=Path(__file__).resolve().parents[1])
    finally:
        (pkg / "marker.txt").unlink()
        pkg.rmdir()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["here", "0o1777"]
