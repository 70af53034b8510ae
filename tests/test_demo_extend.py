"""A finished demo run grows in resumable slices: asked for more steps (no time budget), round 0's SFT resumes from
its final checkpoint, is evaluated again and keeps its earlier evaluation beside the new one; a run that a later
round was built on is refused with an error that names what depends on it. Through the real CLI at toy size."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flywheel.demo.run import EVALUATED, _set_aside_if_stale


def _demo(work: Path, reports: Path, *settings: str) -> subprocess.CompletedProcess:
    sets = [x for s in ("rounds=0", "zero_shot=False", *settings) for x in ("--set", s)]
    return subprocess.run([sys.executable, "-m", "flywheel.demo", "--size", "smoke", "--work", str(work),
                           "--reports", str(reports), "--no-progress", *sets], capture_output=True, text=True,
                          timeout=900)


def _evaluate(work: Path, checkpoint: Path, tag: str, *settings: str) -> subprocess.CompletedProcess:
    sets = [x for s in settings for x in ("--set", s)]
    return subprocess.run([sys.executable, "-m", "flywheel.demo.evaluate", str(checkpoint), "--tag", tag, "--size",
                           "smoke", "--work", str(work), *sets], capture_output=True, text=True, timeout=600)


def _steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_round_zero_is_extended_evaluated_again_and_then_left_alone(tmp_path) -> None:
    work, reports = tmp_path / "work", tmp_path / "reports"
    run = work / "runs" / "sft-r0"
    first = _demo(work, reports)  # the smoke size: 2 steps, no time budget
    assert first.returncode == 0, first.stderr[-3000:]
    assert _steps(run) == [1, 2]
    before = json.loads((work / "eval" / "r0" / "result.json").read_text())

    # Any checkpoint scored as the demo scores its rounds: the same problems and settings give the same verdicts.
    same = _evaluate(work, run / "final", "again")
    assert same.returncode == 0, same.stderr[-3000:]
    again = json.loads((work / "eval" / "again" / "result.json").read_text())
    assert {k: again[k] for k in ("items", "pass@1_strict", "per_family", "miss_classes")} == {
        k: before[k] for k in ("items", "pass@1_strict", "per_family", "miss_classes")}
    assert ((work / "eval" / "again" / "completions.jsonl").read_text()
            == (work / "eval" / "r0" / "completions.jsonl").read_text())
    other = _evaluate(work, run / "final", "other", "heldout_problems=3")
    assert other.returncode != 0 and "heldout.jsonl: these settings give 3 held-out problems, 2 are listed" in (
        other.stderr)
    assert not (work / "eval" / "other").exists()

    more = _demo(work, reports, "sft_steps=4")
    assert more.returncode == 0, more.stderr[-3000:]
    assert "extending 2 steps to 4" in more.stderr and "--resume" in more.stderr
    assert "run-round" not in more.stderr  # only the training and its evaluation ran again
    assert _steps(run) == [1, 2, 3, 4]  # one curve: the resumed steps continue the first ones
    assert (run / "final").resolve().name == "step-4"
    recipe = json.loads((run / "config.json").read_text())["recipe"]["train"]
    assert recipe["steps"] == 4 and recipe["warmup_steps"] == 1  # the first run's warm-up (2 // 10 -> 1), kept
    results = json.loads((reports / "results.json").read_text())
    assert results["rounds"][0]["steps"] == 4
    scored = json.loads((work / "eval" / "r0" / EVALUATED).read_text())
    assert Path(scored["resolved"]).name == "step-4"
    kept = work / "eval" / "r0@step-2"  # the earlier evaluation, set aside, not lost
    assert json.loads((kept / "result.json").read_text()) == before

    t = time.perf_counter()
    again = _demo(work, reports, "sft_steps=4")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "flywheel train" not in again.stderr and not (work / "eval" / "r0@step-4").exists()
    assert time.perf_counter() - t < 300

    # A round built on sft-r0: extending sft-r0 now would leave that round on the old weights.
    rounds = _demo(work, reports, "sft_steps=4", "rounds=1")
    assert rounds.returncode == 0, rounds.stderr[-3000:]
    refused = _demo(work, reports, "sft_steps=6", "rounds=1")
    assert refused.returncode != 0
    assert "runs/sft-r1" in refused.stderr and "sft-r0 has 4 steps" in refused.stderr, refused.stderr[-2000:]
    assert _steps(run) == [1, 2, 3, 4]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_wsd_round_zero_is_extended_from_the_end_of_its_plateau(tmp_path) -> None:
    work, reports = tmp_path / "work", tmp_path / "reports"
    run = work / "runs" / "sft-r0"
    first = _demo(work, reports, "schedule=wsd", "sft_steps=4")
    assert first.returncode == 0, first.stderr[-3000:]
    # warm-up 1 (4 // 10 -> 1), decay over max(1, round(0.2 * 3)) = 1 step: the plateau ends at step 3
    assert (run / "checkpoints" / "step-3" / "trainer_state.pt").is_file()
    more = _demo(work, reports, "schedule=wsd", "sft_steps=8")
    assert more.returncode == 0, more.stderr[-3000:]
    assert "extending 4 steps to 8 from step-3" in more.stderr
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert [r["step"] for r in rows] == list(range(1, 9))  # one curve: the old decay (step 4) replaced
    peak = rows[0]["lr"]
    # flat to the new plateau's end (8 - max(1, round(0.2 * 7)) = 7), one decay at the new end
    assert [r["lr"] for r in rows[:7]] == pytest.approx([peak] * 7) and rows[7]["lr"] < peak
    assert (run / "final").resolve().name == "step-8" and (work / "eval" / "r0@step-4").is_dir()


def test_an_evaluation_of_other_weights_is_set_aside(tmp_path) -> None:
    """The record beside an evaluation decides; without one (older evaluations), the evaluation older than the
    weights is the stale one. Never over an earlier set-aside folder."""
    ckpts = tmp_path / "run" / "checkpoints"
    for step in ("step-2", "step-4"):
        (ckpts / step).mkdir(parents=True)
        (ckpts / step / "model.safetensors").write_bytes(b"weights")
    final = tmp_path / "run" / "final"
    final.symlink_to("checkpoints/step-2")
    out = tmp_path / "eval" / "r0"
    out.mkdir(parents=True)
    (out / "result.json").write_text("{}")
    (out / EVALUATED).write_text(json.dumps({"resolved": str(final.resolve())}))
    _set_aside_if_stale(out, out / "result.json", final)
    assert out.exists()  # the weights it scored

    final.unlink()
    final.symlink_to("checkpoints/step-4")
    _set_aside_if_stale(out, out / "result.json", final)
    assert not out.exists() and (tmp_path / "eval" / "r0@step-2" / "result.json").exists()

    # no record: the file times decide
    out.mkdir()
    (out / "result.json").write_text("{}")
    _set_aside_if_stale(out, out / "result.json", final)
    assert out.exists()  # written after the weights
    import os

    os.utime(out / "result.json", (1_000_000, 1_000_000))
    _set_aside_if_stale(out, out / "result.json", final)
    assert not out.exists()
    assert [p.name for p in (tmp_path / "eval").iterdir() if p.name.startswith("r0@1970")] == ["r0@19700112T134640"]

    # and a second stale evaluation of step-2 does not replace the first one set aside
    out.mkdir()
    (out / "result.json").write_text('{"second": 1}')
    (out / EVALUATED).write_text(json.dumps({"resolved": str(ckpts / "step-2")}))
    _set_aside_if_stale(out, out / "result.json", final)
    assert json.loads((tmp_path / "eval" / "r0@step-2.2" / "result.json").read_text()) == {"second": 1}
    assert (tmp_path / "eval" / "r0@step-2" / "result.json").read_text() == "{}"


def test_a_work_directory_keeps_the_held_out_problems_it_listed(tmp_path) -> None:
    """Regenerated held-out instances take the listed wording and ids (a generator rephrased since, its spec
    version bumped); an instance whose answer differs is an error naming it, and the listed file is left as it was."""
    from flywheel.demo.run import Demo
    from flywheel.demo.sizes import SIZES
    from solvers.errors import ConfigError

    demo = Demo(SIZES["smoke"], tmp_path, tmp_path / "reports")
    first = demo.heldout()
    listed = tmp_path / "heldout.jsonl"
    rows = [json.loads(line) for line in listed.read_text().splitlines()]
    assert [r["id"] for r in rows] == [p.problem_id for p in first]
    rows[1] |= {"id": "older-id", "question": "The same instance, worded as it was. " + rows[1]["question"]}
    listed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = demo.heldout()
    assert [p.problem_id for p in again] == [first[0].problem_id, "older-id"]
    assert again[1].question.startswith("The same instance, worded as it was.")
    assert again[1].ground_truth.objective == first[1].ground_truth.objective
    assert (again[0].problem_id, again[0].question) == (first[0].problem_id, first[0].question)

    rows[0]["answer"] = rows[0]["answer"] + 1.0
    text = "".join(json.dumps(r) + "\n" for r in rows)
    listed.write_text(text)
    with pytest.raises(ConfigError, match=r"item 1 is (transportation|diet) at difficulty 1") as err:
        demo.heldout()
    assert str(listed) in str(err.value) and listed.read_text() == text
