"""The authoring API and the engine: versions, ordering, short-circuit, contract errors, repairs, blindness,
suites from Python and TOML, user files by path, and verdict rows in a real DuckDB table."""

from __future__ import annotations

import textwrap
from pathlib import Path

import duckdb
import pytest

from contracts import Outcome, Repair, Sample, Verdict, contract
from contracts.api import REGISTRY, get_contract
from contracts.engine import REJECTED, run_suite
from contracts.suites import Suite, load_contract_file, load_suite
from contracts.testing import make_sample
from flywheel.generators.testing import problem_with_truth
from solvers.errors import ConfigError, FlywheelError, UnknownNameError

EXAMPLE = Path(__file__).resolve().parents[1] / "contracts" / "examples" / "my_contracts.py"


@pytest.fixture(scope="module")
def sample() -> Sample:
    return make_sample(problem_with_truth(), code="import gurobipy as gp\nm = gp.Model()\nm.optimize()\n")


def _fresh(name: str) -> None:
    REGISTRY.pop(name, None)


def test_version_depends_on_params_and_source() -> None:
    _fresh("t_version")

    @contract("t_version", threshold=1)
    def check(sample, threshold):  # noqa: ANN001, ANN202
        return Verdict.passed()

    v1 = check.version
    assert check.with_params(threshold=2).version != v1
    assert check.with_params(threshold=1).version == v1
    _fresh("t_version")

    @contract("t_version", threshold=1)
    def check2(sample, threshold):  # noqa: ANN001, ANN202
        return Verdict.passed("different body")

    assert check2.version != v1
    with pytest.raises(UnknownNameError, match="thresold.*did you mean 'threshold'"):
        check2.with_params(thresold=3)


def test_raising_contract_is_a_contract_error_and_the_run_goes_on(sample: Sample) -> None:
    _fresh("t_boom")

    @contract("t_boom", severity="reject", cost=0.001)
    def boom(sample):  # noqa: ANN001, ANN202
        raise ZeroDivisionError("oops")

    report = run_suite(Suite.of("s", boom, "solve_called"), [sample])
    rows = {v.contract: v for v in report.verdicts}
    assert rows["t_boom"].outcome == Outcome.CONTRACT_ERROR
    assert "ZeroDivisionError" in rows["t_boom"].message
    assert rows["solve_called"].outcome == Outcome.PASS  # the run went on
    assert report.results[0].status == "accepted"  # a broken contract never rejects on its own
    assert report.summary()["contract_errors"] == 1


def test_cheap_first_and_short_circuit_on_reject(sample: Sample) -> None:
    calls: list[str] = []
    for n in ("t_exp", "t_cheap"):
        _fresh(n)

    @contract("t_exp", cost=10.0)
    def expensive(sample):  # noqa: ANN001, ANN202
        calls.append("expensive")
        return Verdict.passed()

    @contract("t_cheap", cost=0.01)
    def cheap(sample):  # noqa: ANN001, ANN202
        calls.append("cheap")
        return Verdict.failed("nope")

    report = run_suite(Suite.of("s", expensive, cheap), [sample])
    assert calls == ["cheap"]  # cheap ran first, rejected, the expensive one never ran
    rows = {v.contract: v for v in report.verdicts}
    assert rows["t_exp"].outcome == Outcome.SKIP and rows["t_exp"].evidence_dict["short_circuit"] == "t_cheap"
    assert report.results[0].status == REJECTED
    assert report.summary()["rejected_by"] == {"t_cheap": 1}


def test_repairs_are_blind_to_the_ground_truth(sample: Sample) -> None:
    """A repair that tries to read the answer fails with contract_error: the API never hands it over."""
    _fresh("t_peek")
    seen: list[object] = []

    @contract("t_peek", stage="before_execution", severity="repair")
    def peek(sample):  # noqa: ANN001, ANN202
        seen.append(type(sample).__name__)
        objective = sample.problem.ground_truth.objective  # must raise
        return Repair(code=f"print({objective})", kind="cheat")

    assert sample.problem.ground_truth is not None  # the full sample does carry the answer
    report = run_suite(Suite.of("s", peek), [sample])
    (row,) = report.verdicts
    assert row.outcome == Outcome.CONTRACT_ERROR and "ground_truth" in row.message
    assert seen == ["BlindSample"]
    assert report.results[0].sample.attempt.code == sample.attempt.code  # nothing was changed
    blind = sample.blind()
    for field in ("ground_truth", "ir", "reference_programs", "formulation"):
        assert not hasattr(blind.problem, field)


def test_repair_is_recorded_and_counted_with_and_without_repairs() -> None:
    p = problem_with_truth()
    fenced = make_sample(p, code="```python\nimport gurobipy as gp\nm = gp.Model()\nm.optimize()\n```\n",
                         attempt_id="fenced")
    clean = make_sample(p, code="import gurobipy as gp\nm = gp.Model()\nm.optimize()\n", attempt_id="clean")
    ran: list[str] = []

    def executor(attempts):  # noqa: ANN001, ANN202
        ran.extend(a.code for a in attempts)  # only the repaired program runs again; the clean one kept its run
        return [clean.execution.model_copy(update={"program_id": a.attempt_id}) for a in attempts]

    report = run_suite(Suite.of("s", "strip_fences", "has_code", "solve_called"), [fenced, clean], executor=executor)
    assert ran == ["import gurobipy as gp\nm = gp.Model()\nm.optimize()\n"]
    (rec,) = report.repairs
    assert rec.kind == "strip_fences" and rec.sample_id == "fenced"
    assert rec.before.startswith("```") and not rec.after.startswith("```")
    summary = report.summary()
    assert summary["accepted"] == 2 and summary["accepted_without_repairs"] == 1 and summary["repaired"] == 1


def test_engine_runs_the_executor_for_unexecuted_samples() -> None:
    from solvers.records import ExecStatus, Execution

    p = problem_with_truth()
    s = make_sample(p, code="print('hi')\n", executed=False)
    seen: list[str] = []

    def executor(attempts):  # noqa: ANN001, ANN202
        seen.extend(a.code for a in attempts)
        return [Execution(program_id=a.attempt_id, status=ExecStatus.NO_SOLVE_CALL) for a in attempts]

    report = run_suite(Suite.of("s", "has_code", "solve_called"), [s], executor=executor)
    assert seen == ["print('hi')\n"]
    assert report.results[0].status == REJECTED and report.results[0].rejected_by == "solve_called"


def test_sandbox_errors_are_never_held_against_a_sample() -> None:
    from contracts.engine import INFRA_ERROR
    from solvers.records import ExecStatus

    s = make_sample(problem_with_truth(), code="import gurobipy\n", solves=(), status=ExecStatus.SANDBOX_ERROR)
    report = run_suite(Suite.of("s", "has_code", "executes", "solve_called"), [s])
    assert report.results[0].status == INFRA_ERROR and report.summary()["rejected"] == 0
    assert {v.contract: v.outcome for v in report.verdicts} == {"has_code": "pass", "executes": "skip",
                                                                 "solve_called": "skip"}


def test_user_file_loads_by_path_and_runs(tmp_path: Path, sample: Sample) -> None:
    module, defined = load_contract_file(EXAMPLE)
    assert [c.name for c in defined] == ["small_and_fast"]
    suite = load_suite(str(EXAMPLE))
    report = run_suite(suite, [sample])
    (row,) = report.verdicts
    assert row.contract == "small_and_fast" and row.outcome == "pass"
    strict = suite.contracts[0].with_params(max_vars=1)
    (row2,) = run_suite(Suite.of("s", strict), [sample]).verdicts
    assert row2.outcome == "fail" and row2.version != row.version
    load_contract_file(EXAMPLE)  # loading the same file again replaces its contracts, no clash
    # a built-in suite plus the user file, as `run-round --suite generator+my_contracts.py` asks for
    combined = load_suite(f"generator+{EXAMPLE}")
    assert combined.names()[-1] == "small_and_fast" and combined.names()[0] == "has_code"
    assert load_suite("policy", contract_files=[EXAMPLE]).names()[-1] == "small_and_fast"
    clash = tmp_path / "clash.py"
    clash.write_text(EXAMPLE.read_text())
    with pytest.raises(FlywheelError, match="already defined"):
        load_contract_file(clash)


def test_toml_suite_with_overrides_and_unknown_key(tmp_path: Path, sample: Sample) -> None:
    (tmp_path / "mine.py").write_text(EXAMPLE.read_text().replace("def small_and_fast", "def mine_small"))
    (tmp_path / "suite.toml").write_text(textwrap.dedent("""
        name = "lenient"
        files = ["mine.py"]
        [[contracts]]
        name = "objective_matches"
        params = { rule = "orlm_lenient" }
        severity = "warn"
        [[contracts]]
        name = "mine_small"
    """))
    suite = load_suite(str(tmp_path / "suite.toml"))
    assert suite.name == "lenient" and suite.names() == ["objective_matches", "mine_small"]
    assert suite.contracts[0].params["rule"] == "orlm_lenient" and suite.contracts[0].severity == "warn"
    assert len(run_suite(suite, [sample]).verdicts) == 2
    (tmp_path / "bad.toml").write_text('[[contracts]]\nname = "has_code"\nparms = {}\n')
    with pytest.raises(ConfigError, match=r"bad.toml contracts\[0\].*'parms'.*did you mean 'params'"):
        load_suite(str(tmp_path / "bad.toml"))
    with pytest.raises(UnknownNameError, match="did you mean 'policy'"):
        load_suite("polcy")


def test_verdict_rows_are_queryable_in_duckdb(tmp_path: Path, sample: Sample) -> None:
    report = run_suite(load_suite("generator"), [sample, make_sample(problem_with_truth(), code="total = 1 + 2  # builds nothing\n",
                                                                    solves=(), attempt_id="b")])
    rows = report.verdict_rows()
    assert len(rows) == 2 * len(load_suite("generator").contracts)  # one row per sample x contract
    con = duckdb.connect(str(tmp_path / "v.duckdb"))
    cols = list(rows[0])
    con.execute(f"create table verdicts ({', '.join(f'{c} VARCHAR' for c in cols)})")
    con.executemany(f"insert into verdicts values ({', '.join('?' for _ in cols)})",
                    [[None if r[c] is None else str(r[c]) for c in cols] for r in rows])
    got = dict(((c, o), n) for c, o, n in con.execute(
        "select contract, outcome, count(*) from verdicts group by 1, 2").fetchall())
    assert got[("solve_called", "pass")] == 1 and got[("solve_called", "fail")] == 1


def test_builtin_names_resolve() -> None:
    for name in ("has_code", "executes", "solve_called", "status_matches_ground_truth", "objective_matches",
                 "feasible_on_reference", "cross_solver", "structurally_equivalent", "numeric_coverage",
                 "no_hardcoded_answer", "uses_requested_api", "response_format", "cot_consistent", "sanity"):
        assert get_contract(name).name == name
