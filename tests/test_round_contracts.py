"""A user contract file, written as the README shows, runs in a real round and its verdicts are queryable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

USER_CONTRACT = '''
from contracts import Verdict, contract


@contract(stage="after_execution", severity="reject")
def no_diet(sample) -> Verdict:
    """Reject diet problems (a user's own data policy)."""
    if sample.problem.family == "diet":
        return Verdict.failed("diet problems are not wanted here")
    return Verdict.passed("not diet")
'''


def _flywheel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flywheel.cli", *args], capture_output=True, text=True, timeout=600)


def test_user_contract_rejects_in_a_round(tmp_path: Path):
    user = tmp_path / "my_contracts.py"
    user.write_text(USER_CONTRACT)
    store = tmp_path / "store"
    proc = _flywheel("run-round", "--store", str(store), "--problems", "4", "--families", "diet,assignment",
                     "--contracts", str(user), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["rejected_by"] == {"no_diet": 2}
    by_family = {f["family"]: f for f in summary["families"]}
    assert by_family["diet"]["rejected"] == 2 and by_family["assignment"]["accepted"] == 2
    sql = _flywheel("sql", "--store", str(store), "--format", "json",
                    "select contract, outcome, count(*) as n from verdicts where contract = 'no_diet' group by 1, 2 "
                    "order by 2")
    assert sql.returncode == 0, sql.stderr
    assert json.loads(sql.stdout) == [{"contract": "no_diet", "outcome": "fail", "n": 2},
                                      {"contract": "no_diet", "outcome": "pass", "n": 2}]
    stats = _flywheel("stats", "--store", str(store), "--format", "json")
    assert stats.returncode == 0, stats.stderr
    boundary = {(r["policy"], r["family"]): r for r in json.loads(stats.stdout)["capability_boundary"]}
    assert boundary[("reference", "assignment")]["pass"] == 2
    assert boundary[("reference", "diet")]["pass"] == 0 and boundary[("reference", "all")]["attempts"] == 4
