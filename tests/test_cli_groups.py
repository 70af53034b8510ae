"""Each CLI command group is a module-level ``typer.Typer`` (issue 15): importable and runnable on its own, and the
root ``flywheel`` app mounts the very same object."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from flywheel.cli import app as root
from flywheel.commands import contracts, generators, kernels, policy

GROUPS = {"contracts": contracts, "policy": policy, "kernels": kernels, "generators": generators}


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_group_is_a_module_level_app_mounted_by_the_root(name):
    module = GROUPS[name]
    assert isinstance(module.app, typer.Typer)
    mounted = {g.name: g.typer_instance for g in root.registered_groups}
    assert mounted[name] is module.app


@pytest.mark.parametrize(("name", "rows", "key", "expected"), [
    ("contracts", lambda out: out["contracts"], "name", "has_code"),
    ("policy", lambda out: out, "name", "openai"),
    ("kernels", lambda out: out, "op", "attention"),
    ("generators", lambda out: out, "name", "cvrp"),
])
def test_group_list_runs_without_the_root_app(name, rows, key, expected):
    res = CliRunner().invoke(GROUPS[name].app, ["list", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert expected in {r[key] for r in rows(json.loads(res.output))}


def test_generators_list_filters_by_technique_and_show_prints_the_seeded_question():
    from flywheel.generators.base import generate_problem

    runner = CliRunner()
    res = runner.invoke(generators.app, ["list", "--technique", "subtour_elimination", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert {"tsp", "cvrp"} <= {r["name"] for r in rows}
    assert all("subtour_elimination" in r["techniques"] for r in rows)
    bad = runner.invoke(generators.app, ["list", "--technique", "subtour"])
    assert bad.exit_code != 0 and "subtour_elimination" in str(bad.exception)
    res = runner.invoke(generators.app, ["show", "diet", "--seed", "4", "--difficulty", "2", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["question"] == generate_problem("diet", 4, 2).question
    csv_out = runner.invoke(generators.app, ["list", "--technique", "subtour_elimination", "--format", "csv"])
    assert csv_out.exit_code == 0 and csv_out.output.splitlines()[0].startswith("name,class,techniques")
    assert {r["name"] for r in rows} == {line.split(",")[0] for line in csv_out.output.splitlines()[1:]}
    res = runner.invoke(generators.app, ["show", "diet", "--seed", "4", "--difficulty", "2", "--infeasible",
                                         "--format", "json"])
    assert json.loads(res.output)["infeasible_by_design"] is True
