"""The generate stage over Ray (``[round] backend = "ray"``) on a real local ``ray.init(num_cpus=2)``: problem for
problem the same records as the local path, in task order; and a whole round with the ray backend stores the
same problems as a local round. Timing fields (solver seconds, and the measured difficulty that includes them) are
the only ones allowed to differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.config import FlywheelConfig
from flywheel.generators.base import derive_seed, family_names
from flywheel.round.context import RoundContext
from flywheel.round.generate import _generate_item, stage_generate
from flywheel.round.plan import RoundPlan
from flywheel.store import Store
from solvers.render import APIS

ray = pytest.importorskip("ray", reason="optional extra 'ray' (make install-test installs it)")

# Seconds a solver took: different on every run, wherever it runs.
TIMING = {"ground_truth_json", "gt_solve_ms", "measured_difficulty", "measured_level"}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def comparable(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k not in TIMING}
    gt = json.loads(row["ground_truth_json"]) if row.get("ground_truth_json") else None
    if gt is not None:
        out["runs"] = [(r["solver"], r["status"], r["objective"]) for r in gt["runs"]]
    return out


def test_ray_items_equal_local_items_problem_for_problem(local_ray) -> None:  # noqa: ARG001
    from flywheel.round.ray_generate import map_items

    families = family_names()
    tasks = [(i, families[i % len(families)], derive_seed(5, i), None, 0.2, APIS[i % len(APIS)])
             for i in range(2 * len(families))]
    remote = list(map_items(tasks))
    local = [_generate_item(t) for t in tasks]
    assert [r["idx"] for r in remote] == [t[0] for t in tasks]  # task order
    for a, b in zip(remote, local, strict=True):
        assert comparable(a["problem"]) == comparable(b["problem"]), a["problem"]["family"]
        assert a["attempt"] == b["attempt"] and a["errors"] == b["errors"] == []


def test_round_with_ray_backend_stores_what_a_local_round_stores(local_ray, tmp_path: Path) -> None:  # noqa: ARG001
    rows = {}
    for backend in ("local", "ray"):
        cfg = FlywheelConfig.model_validate({"round": {"problems": 6, "seed": 3, "backend": backend,
                                                        "families": ["diet", "capital_budgeting", "tsp"]}})
        plan = RoundPlan.from_config(cfg)
        with Store.open(tmp_path / backend) as store:
            # The generate stage only: executing the reference programs is the sandbox's job (tested there).
            ctx = RoundContext(store, plan, 0, 2, lambda s, n: None, lambda s, n: None)
            for _ in stage_generate(ctx):
                pass
            rows[backend] = [comparable(r) for r in store.query("SELECT * EXCLUDE (created_at) FROM problems "
                                                                "ORDER BY problem_id").to_pylist()]
        assert plan.backend == backend
    assert len(rows["ray"]) == 6 and rows["ray"] == rows["local"]
    # Placement is not content: both rounds have the same config hash.
    hashes = {RoundPlan.from_config(FlywheelConfig.model_validate({"round": {"backend": b}})).config_hash
              for b in ("local", "ray")}
    assert len(hashes) == 1
