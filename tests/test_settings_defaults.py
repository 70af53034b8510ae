"""One default per setting (issue 15): the sandbox's wall limit is the same for a bare SandboxConfig, for
`flywheel sandbox run` without --timeout and for a round at its default [sandbox] section, and `flywheel config show`
prints what is fixed (solver APIs, tolerances, sandbox defaults)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from flywheel.cli import app
from flywheel.commands.sandbox import _config
from flywheel.config import load_config
from flywheel.round.execute import sandbox_config
from flywheel.round.plan import RoundPlan
from solvers.render import APIS
from solvers.sandbox import SandboxConfig


def test_cli_and_round_get_the_same_sandbox_limits():
    bare = SandboxConfig()
    cli = _config(None, None, ["print(1)"])
    round_ = sandbox_config(RoundPlan.from_config(load_config()))
    assert bare.timeout_s == cli.timeout_s == round_.timeout_s
    assert bare.memory_mb == cli.memory_mb == round_.memory_mb


def test_config_show_prints_the_fixed_settings():
    res = CliRunner().invoke(app, ["config", "show", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    fixed = data["fixed"]
    assert fixed["solver_apis"] == list(APIS)
    assert {"strict", "orlm_lenient"} <= set(fixed["tolerance_rules"])
    assert fixed["sandbox_timeout_s"] == data["sandbox"]["timeout_s"] == SandboxConfig().timeout_s
    assert fixed["sandbox_memory_mb"] == data["sandbox"]["memory_mb"] == SandboxConfig().memory_mb
