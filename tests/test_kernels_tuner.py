"""The tuner end to end on a tiny Qwen3-MoE (fp32, one small batch): profile -> race -> verify -> table; candidate
files are screened in the sandbox and checked again here (a correct one is raced, a wrong one rejected); the CLI writes a table the trainer's
``kernels.apply`` loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import kernels
from flywheel.kernel_candidates import sandbox_runner
from kernels.table import TuningTable
from kernels.tuner import tune
from training.models import build_model

GOOD = '''OP = "swiglu"
import torch


def candidate(gate, up):
    return gate * torch.sigmoid(gate) * up
'''
WRONG = '''OP = "swiglu"
import torch


def candidate(gate, up):
    return torch.sigmoid(gate) * up  # forgot the gate factor
'''


@pytest.mark.slow
def test_tune_writes_a_table_that_applies(tmp_path: Path) -> None:
    (tmp_path / "good_swiglu.py").write_text(GOOD)
    (tmp_path / "wrong_swiglu.py").write_text(WRONG)
    model = build_model("deepseek_v3_tiny", "", 256, {}, 0)
    batch = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    out = tmp_path / "table.json"
    table, results, steps = tune(model, batch, "float32", "cpu", repeats=2, step_repeats=1,
                                 ops={"swiglu", "moe_router", "rms_norm"}, out=out, skip={"compiled"},
                                 candidate_files=[str(tmp_path / "good_swiglu.py"), str(tmp_path / "wrong_swiglu.py")],
                                 runner=sandbox_runner())
    assert steps["before_s"] > 0 and steps["after_s"] > 0
    by_op = {r.op: r for r in results}
    assert set(by_op) == {"swiglu", "moe_router", "rms_norm"}
    sw = {c.backend: c for c in by_op["swiglu"].candidates}
    assert sw["file:good_swiglu"].ok and sw["file:good_swiglu"].ms > 0
    assert not sw["file:wrong_swiglu"].ok and "relative error" in sw["file:wrong_swiglu"].detail
    loaded = TuningTable.load(out)  # registers the file candidates it names
    reverted = set(loaded.meta.get("reverted_for_step", []))
    for r in results:  # the winner is the fastest of the correct ones, unless the step check sent it back
        good = [c for c in r.candidates if c.ok]
        assert r.winner == ("reference" if r.op in reverted else min(good, key=lambda c: c.ms).backend)
    assert {e.op for e in loaded.entries} == {"swiglu", "moe_router", "rms_norm"}
    assert "profile_ms" in loaded.meta and loaded.meta["step_s_before"] > 0
    kernels.apply(model, out)
    ids = batch
    assert torch.isfinite(model(input_ids=ids, labels=ids).loss)
    kernels.revert(model)


@pytest.mark.slow
def test_cli_tune_and_list(tmp_path: Path) -> None:
    from flywheel.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["kernels", "list", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert {"reference", "triton", "npu"} <= {r["backend"] for r in rows if r["op"] == "rms_norm"}
    out = tmp_path / "t.json"
    res = runner.invoke(app, ["kernels", "tune", "--model", "llama_tiny", "--dtype", "fp32", "--rows", "2", "--seq",
                              "16", "--vocab", "128", "--repeats", "2", "--op", "rms_norm", "--skip-backend",
                              "compiled", "--out", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["entries"][0]["op"] == "rms_norm"
    from solvers.errors import ConfigError

    bad = runner.invoke(app, ["kernels", "tune", "--model", "no_such_arch"])
    assert isinstance(bad.exception, ConfigError)  # flywheel.cli.main prints it as one line, exit 2


def test_race_ranks_by_cost_and_a_raising_backend_loses() -> None:
    """The round-robin race: a backend that does the same work plus a 50 ms sleep ranks behind (its best run cannot
    beat the sleep, while the reference's best run of a 64x32 SwiGLU is far below it); one that raises gets inf."""
    import time

    from kernels import registry
    from kernels.tuner import race

    ref = registry.get("swiglu").fn

    def slow(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        time.sleep(0.05)
        return ref(gate, up)

    def boom(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("cannot run these inputs")

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(64, 32, generator=g).requires_grad_(True), torch.randn(64, 32, generator=g).requires_grad_(True))
    ms = race({"reference": ref, "slow": slow, "boom": boom}, args, {}, "float32", "cpu", repeats=2)
    assert ms["slow"] >= 50.0 > ms["reference"]
    assert ms["boom"] == float("inf")


def test_a_table_that_slows_the_step_has_the_culprit_op_sent_back_to_reference() -> None:
    """Per-op races cannot see a backend that is fast alone and slow in the step (a bf16 grouped GEMM whose kernels
    are compiled anew for every expert-group size once routing moves). The step check reverts ops one at a time,
    most expensive first, keeps a revert only when the step gets faster, and stops once the step is back within
    ``STEP_TOL`` of the unpatched one; a timer that no revert helps leaves the table as it was."""
    from kernels.tuner import Candidate, OpResult, build_table, revert_slowing_ops

    def result(op: str, winner: str, profile_ms: float) -> OpResult:
        return OpResult(op, "s", "bfloat16", profile_ms,
                        [Candidate("reference", True, 2.0, 0.0), Candidate(winner, True, 1.0, 0.0)], winner)

    def results() -> list[OpResult]:
        return [result("rms_norm", "fused", 10.0), result("moe_dispatch", "grouped_mm", 30.0),
                result("rope", "fused", 5.0)]

    def build(rs: list[OpResult]) -> TuningTable:
        return build_table(rs, "cpu", {})

    timed: list[dict[str, str]] = []

    def slow_grouped(table: TuningTable) -> float:
        chosen = {e.op: e.backend for e in table.entries}
        timed.append(chosen)
        return 1.0 + (1.0 if chosen["moe_dispatch"] == "grouped_mm" else 0.0) - (
            0.05 if chosen["rms_norm"] == "fused" else 0.0)

    rs = results()
    table, after, reverted = revert_slowing_ops(rs, 1.0, 1.95, slow_grouped, build)
    assert reverted == ["moe_dispatch"] and after == pytest.approx(0.95)
    assert {e.op: e.backend for e in table.entries} == {"rms_norm": "fused", "moe_dispatch": "reference",
                                                          "rope": "fused"}
    assert len(timed) == 1  # moe_dispatch (the most expensive) first; then within tolerance: no more trials
    assert [r.winner for r in rs] == ["fused", "reference", "fused"]

    rs = results()
    table, after, reverted = revert_slowing_ops(rs, 1.0, 2.0, lambda t: 2.0, build)
    assert reverted == [] and after == 2.0
    assert {e.op: e.backend for e in table.entries} == {"rms_norm": "fused", "moe_dispatch": "grouped_mm",
                                                          "rope": "fused"}
