"""CPT checkpoint selection by proxy SFT (flywheel.evaluate.selection): the Pass@1 rule, and the whole loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from flywheel.evaluate.selection import passes
from solvers.records import ExecStatus, Execution, SolveCall, SolveStatus


def _ex(status: SolveStatus, objective: float | None) -> Execution:
    return Execution(program_id="p", status=ExecStatus.OK,
                     solves=(SolveCall(api="gurobipy", status=status, objective=objective),))


@pytest.mark.parametrize(("status", "objective", "answer", "expected"), [
    (SolveStatus.OPTIMAL, 100.0, 100.0, True),
    (SolveStatus.OPTIMAL, 100.00005, 100.0, True),   # within 1e-6 + 1e-6 * 100 = 1.01e-4
    (SolveStatus.OPTIMAL, 100.001, 100.0, False),    # beyond it: strict rule, no rounding
    (SolveStatus.INFEASIBLE, None, "infeasible", True),
    (SolveStatus.OPTIMAL, 0.0, "infeasible", False),  # a number never matches an infeasible ground truth
    (SolveStatus.OPTIMAL, 5.0, None, False),          # unlabelled items cannot pass
])
def test_pass_rule(status, objective, answer, expected) -> None:
    assert passes(_ex(status, objective), answer) is expected


def test_no_solve_never_passes() -> None:
    assert not passes(Execution(program_id="p", status=ExecStatus.RUNTIME_ERROR), 3.0)


@pytest.mark.slow
def test_selection_table_over_cpt_checkpoints(tmp_path: Path) -> None:
    from flywheel.curation.synthetic import write_problem_shards
    from flywheel.evaluate.selection import select_checkpoint
    from training.config import load_recipe
    from training.trainer import run

    cpt, sft = write_problem_shards(tmp_path / "shards", n_train=24, n_val=4, seed=21)
    recipe = load_recipe("cpt", {"data.sources": [{"path": str(cpt)}], "train.steps": 4, "train.save_every": 2,
                                 "train.batch_rows": 4, "train.micro_batch": 4, "data.seq_len": 128,
                                 "tokenizer.vocab_size": 384, "train.eval_every": 0})
    run(recipe, tmp_path / "cpt")
    result = select_checkpoint(tmp_path / "cpt", str(sft), held_out=2, steps=2, seed=909,
                               out=tmp_path / "sel", max_new_tokens=16)
    assert [r["checkpoint"] for r in result["rows"]] == ["step-2", "step-4"]
    assert result["best"] in {"step-2", "step-4"}
    for row in result["rows"]:
        assert row["items"] >= 1 and 0 <= row["pass_at_1"] <= 1
    best = min(result["rows"], key=lambda r: (-r["pass_at_1"], r["val_loss"]))
    assert best["checkpoint"] == result["best"]
