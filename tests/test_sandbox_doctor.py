"""``flywheel sandbox doctor`` says which isolation layers are active here and why any is missing; a round refuses
to run without memory caps unless the config opts out (``[sandbox] allow_uncapped``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flywheel.round.execute import require_memory_caps
from solvers.errors import SandboxError
from solvers.sandbox import cgroups

FLYWHEEL = [sys.executable, "-m", "flywheel.cli"]


def test_doctor_reports_the_layers_a_program_really_gets() -> None:
    res = subprocess.run([*FLYWHEEL, "sandbox", "doctor", "--format", "json"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(res.stdout)
    layers = {layer["layer"].split(" (")[0]: layer for layer in data["layers"]}
    assert {"bwrap namespaces", "no network", "seccomp", "rlimits", "cgroup memory + pids caps",
            "unprivileged uid per slot"} <= set(layers)
    assert all(layer["detail"] for layer in data["layers"])  # every layer says how, or why it is missing
    isolation = data["isolation"].split("+")
    # what the doctor probed agrees with what the program got
    assert layers["bwrap namespaces"]["active"] == ("bwrap" in isolation)
    assert layers["cgroup memory + pids caps"]["active"] == any(x.startswith("cgroup-v") for x in isolation)
    assert layers["seccomp"]["active"] == ("seccomp" in isolation)
    assert layers["unprivileged uid per slot"]["active"] == ("uid" in isolation) == (os.geteuid() == 0)
    # the contract jail is probed for real: its in-process layers are always there, bwrap where the slots have it
    jail = data["contract_jail"].split("+")
    assert {"rlimits"} <= set(jail) and ("bwrap" in jail) == ("bwrap" in isolation)
    assert ("seccomp" in jail) == ("seccomp" in isolation)


def test_doctor_table_names_every_layer() -> None:
    res = subprocess.run([*FLYWHEEL, "sandbox", "doctor", "--no-run"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "seccomp" in res.stdout and "cgroup memory + pids caps" in res.stdout
    assert "solve calls captured:" in res.stdout and "pyscipopt" in res.stdout


def test_doctor_lists_the_captured_solver_apis_with_versions() -> None:
    import importlib.metadata as md

    from solvers.sandbox.doctor import solver_apis

    rows = {r["api"]: r for r in solver_apis()}
    assert {"gurobipy", "pyomo", "pulp", "scipy", "pyscipopt", "highspy", "coptpy"} <= rows.keys()
    assert rows["gurobipy"]["installed"] and rows["gurobipy"]["version"] == md.version("gurobipy")
    assert rows["pulp"]["version"] == md.version("pulp")  # module pulp, distribution PuLP


def test_a_round_refuses_to_run_uncapped_unless_it_opts_out() -> None:
    def uncapped() -> tuple[str, str]:  # a host without usable cgroups (not this one: it has v1 as root)
        return "", "no cgroup2 mount at /sys/fs/cgroup and no v1 memory + pids controllers under it"

    with pytest.raises(SandboxError, match="allow_uncapped = true") as e:
        require_memory_caps({}, probe=uncapped)
    assert e.value.culprit == "sandbox.allow_uncapped" and "no cgroup2 mount" in str(e.value)
    require_memory_caps({"allow_uncapped": True}, probe=uncapped)  # opted out
    require_memory_caps({"backend": "ray"}, probe=uncapped)  # a Ray node's pool has its own host
    layer, why = cgroups.probe()
    if layer:
        require_memory_caps({})  # this host: the real probe finds caps
    else:
        with pytest.raises(SandboxError):
            require_memory_caps({})
