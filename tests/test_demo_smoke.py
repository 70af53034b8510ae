"""The flywheel demo at toy size (``--size smoke``): every stage runs through the real CLI (run-round, export,
train, the hf: policy sampling new problems, eval score) and leaves its artefacts. The toy model learns nothing in
a few steps, so no score is asserted, only that each stage produced what the next one reads, and that a second
invocation resumes (every stage skipped)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from flywheel.curation.mix import load_mix
from flywheel.demo.plots import ROUND_PLOTS, write_rounds_table
from flywheel.demo.run import SAMPLE, Demo, retrain_mix
from flywheel.demo.sizes import SIZES, DemoSize
from flywheel.policies.prompts import render
from solvers.errors import ConfigError
from training.config import load_recipe

SMOKE = SIZES["smoke"]


def _demo(work: Path, reports: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flywheel.demo", "--size", "smoke", "--work", str(work),
                           "--reports", str(reports), "--no-progress"], capture_output=True, text=True, timeout=1500)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    work, reports = root / "work", root / "reports"
    proc = _demo(work, reports)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work, reports


def _sql(work: Path, query: str) -> list[dict]:
    flywheel = str(Path(sys.executable).with_name("flywheel"))
    out = subprocess.run([flywheel, "sql", "--store", str(work / "store"), "--format", "json", query],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_stage_leaves_its_artefacts(demo) -> None:
    work, reports = demo
    # Store: round-0 references, then each round's policy samples from the previous round's checkpoint.
    rows = _sql(work, "select policy, count(*) as n from samples group by 1")
    by_policy = {r["policy"]: r["n"] for r in rows}
    assert by_policy["reference"] >= SMOKE.round0_problems
    policies = sorted(p for p in by_policy if p.startswith("hf:"))
    assert [p.rsplit("/", 2)[-2] for p in policies] == [f"sft-r{r}" for r in range(SMOKE.rounds)], policies
    for p in policies:  # K samples per problem of the round
        assert by_policy[p] == SMOKE.round_samples * SMOKE.round_problems * len(SMOKE.round_difficulties), p
    orphans = _sql(work, "select count(*) as n from samples s where s.problem_id not in (select problem_id from "
                         "problems)")
    assert orphans[0]["n"] == 0

    # SFT shards: chat records whose prompt is the policy's code_only prompt, the program in the compact style.
    for shard in ("sft0", "heldout"):
        assert pq.read_metadata(work / "shards" / shard / "train.parquet").num_rows > 0, shard
    sft = pq.read_table(work / "shards" / "sft0" / "train.parquet").to_pylist()[0]
    question = _sql(work, f"select question from problems where problem_id = '{sft['problem_id']}'")[0]["question"]
    sent = render("code_only", question=question.strip(), api="gurobipy").messages
    assert sft["messages"][:-1] == [dict(m) for m in sent]
    program = sft["messages"][-1]["content"]
    assert program.startswith("```python") and "#" not in program and "Optimal objective:" in program

    # Results: one entry per round, each scored on the same unseen problems, per family, with miss classes.
    results = json.loads((reports / "results.json").read_text())
    assert [r["round"] for r in results["rounds"]] == list(range(SMOKE.rounds + 1))
    held = SMOKE.heldout_problems * len(SMOKE.heldout_difficulties)
    for r in results["rounds"]:
        assert r["items"] == held and 0.0 <= r["pass@1_strict"] <= r["pass@1_lenient"] <= 1.0
        assert set(r["per_family"]) == set(SMOKE.families)
        assert sum(f["items"] for f in r["per_family"].values()) == held
        assert sum(e["items"] for e in r["per_difficulty"].values()) == held
        assert set(r["per_difficulty"]) == {str(d) for d in SMOKE.heldout_difficulties}
        # every strict miss has a class
        assert sum(r["miss_classes"].values()) == round(held * (1 - r["pass@1_strict"]))
        # ... and what it got wrong (its data against the reference program)
        assert sum(r["miss_anatomy"].values()) == round(held * (1 - r["pass@1_strict"]))
    for r in results["rounds"][1:]:
        pol = r["policy"]
        assert pol["samples"] == SMOKE.round_samples * SMOKE.round_problems * len(SMOKE.round_difficulties)
        # every rejected sample ran (or failed to) in the sandbox: its execution status is counted
        assert pol["accepted"] + sum(pol["rejected_by_exec_status"].values()) == pol["samples"], pol
        # Retraining replays round 0's references beside the policy samples accepted so far (none, at toy size,
        # unless the random model wrote a correct program: then their own shard, policy rows only).
        recipe = load_recipe(str(work / "recipes" / f"sft-r{r['round']}.toml"))
        train = [s for s in recipe.data.sources if s.weight > 0]
        assert [s.weight for s in train] == r["data_weights"] == retrain_mix(
            results["rounds"][0]["train_rows"], r["policy_rows"], SMOKE.policy_share,
            SMOKE.retrain_steps * SMOKE.batch_rows, SMOKE.policy_repeats)
        assert Path(train[0].path).name == "sft0"
        if r["policy_rows"]:
            pol = pq.read_table(Path(train[1].path) / "train.parquet").to_pylist()
            assert len(pol) == r["policy_rows"] and all(row["policy"] != "reference" for row in pol)
    assert results["settings"]["heldout_in_training_store"] == 0
    for name in ROUND_PLOTS:
        assert (reports / name).stat().st_size > 5000, name  # a rendered figure, not an empty file
    assert "Pass@1 by flywheel round" in (reports / "results.md").read_text()
    assert "Strict Pass@1 by held-out difficulty" in (reports / "results.md").read_text()
    # every training's steps are recorded; the toy size has no time budget, so none stopped short
    assert [r["steps"] for r in results["rounds"]] == [SMOKE.sft_steps] + [SMOKE.retrain_steps] * SMOKE.rounds
    assert "steps:" not in (reports / "results.md").read_text()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_second_run_resumes(demo) -> None:
    work, reports = demo
    first = json.loads((reports / "results.json").read_text())
    t = time.perf_counter()
    proc = _demo(work, reports)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "flywheel train" not in proc.stderr and "flywheel run-round" not in proc.stderr, proc.stderr[-2000:]
    assert time.perf_counter() - t < 300  # no stage reran (the SQL look-ups and plots remain)
    # ... and the report keeps the times of the stages the first run did (WORK/stages.json)
    again = json.loads((reports / "results.json").read_text())
    assert again["resumed"] and not first["resumed"]
    trained = [r["train_s"] for r in first["rounds"] if r.get("train_s")]
    assert trained and [r["train_s"] for r in again["rounds"] if r.get("train_s")] == trained
    assert "resumed" in (reports / "results.md").read_text()


def test_only_the_base_model_is_scored_with_the_repeat_guard(tmp_path) -> None:
    """The base checkpoint's zero-shot rows end once they loop ([policy] repeat_stop); every fine-tuned model is
    scored without the guard, so rounds compare at equal settings. Limits as the size sets them."""
    from flywheel.config import load_config
    from flywheel.demo.run import Demo

    full = SIZES["full"]
    demo = Demo(full, tmp_path, tmp_path / "reports")
    base, r0 = load_config(demo.policy_config("base")).policy, load_config(demo.policy_config("r0")).policy
    assert base.repeat_stop == full.zero_shot_repeat_stop > 0 and r0.repeat_stop == 0
    assert (base.max_tokens, r0.max_tokens) == (full.zero_shot_max_tokens, full.max_tokens)
    assert demo.policy_config("base") != demo.policy_config("r0") == demo.policy_config("r1")
    # The rounds' sampling: the measured-faster dtype and the loop guard (the contracts judge what it writes);
    # every evaluation stays fp32 without the guard.
    sample = load_config(demo.policy_config(SAMPLE)).policy
    assert (sample.hf_dtype, sample.repeat_stop) == (full.round_hf_dtype, full.round_repeat_stop) == ("auto", 128)
    exact = load_config(Demo(replace(full, round_hf_dtype="fp32"), tmp_path, tmp_path).policy_config(SAMPLE)).policy
    assert exact.hf_dtype == "fp32"
    assert (r0.hf_dtype, base.hf_dtype) == ("fp32", "fp32")
    assert demo.policy_config(SAMPLE) not in (demo.policy_config("base"), demo.policy_config("r0"))
    assert load_mix(demo.all_train_mix()).validation == 0.0


def test_retraining_gives_the_accepted_samples_their_share_of_each_batch() -> None:
    # 30 accepted samples beside 600 references: drawn in proportion they are 4.8% of the rows, so 36 steps of 4
    # rows see about 7 of them; at the default share half of every batch is theirs.
    assert retrain_mix(600, 30, 0.5) == [0.5, 0.5]
    assert retrain_mix(600, 30, 0.0) == pytest.approx([600 / 630, 30 / 630])
    assert retrain_mix(600, 0, 0.5) == [1.0]  # nothing accepted: round 0's references alone
    # 6 accepted samples, 36 steps x 4 rows: half of 144 rows would show each one 12 times; capped at 4 times each
    assert retrain_mix(600, 6, 0.5, 144, 4) == pytest.approx([1 - 24 / 144, 24 / 144])
    assert retrain_mix(600, 60, 0.5, 144, 4) == [0.5, 0.5]  # enough samples: the cap does not bind


def test_a_round_recipe_carries_each_shards_weight(tmp_path) -> None:
    demo = Demo(SIZES["rounds"], tmp_path, tmp_path / "reports")
    shards = [tmp_path / "shards" / "sft0", tmp_path / "shards" / "policy-r1"]
    recipe = load_recipe(str(demo.recipe("sft-r1", "sft", shards, steps=3, seq_len=512, lr=3e-5, weights=[0.25, 0.75],
                                         init=tmp_path / "prev")))
    assert [(Path(s.path).name, s.weight) for s in recipe.data.sources] == [
        ("sft0", 0.25), ("policy-r1", 0.75), ("heldout", 0.0)]
    with pytest.raises(ValueError, match="2 shards but 1 weights"):
        demo.recipe("sft-r1", "sft", shards, steps=3, seq_len=512, lr=3e-5, weights=[1.0])
    with pytest.raises(ConfigError, match="policy_share"):
        DemoSize(name="x", policy_share=1.0)


def test_round_zeros_recipe_keeps_the_budgets_floor(tmp_path) -> None:
    """The speedrun's round 0 trains 200 steps or its budget's, never fewer than 150 ([train] min_steps); an
    override to fewer steps lowers the floor with them, and a run without a budget has no floor to keep."""
    speedrun = SIZES["speedrun"]
    demo = Demo(speedrun, tmp_path, tmp_path / "reports")
    shards = [tmp_path / "shards" / "sft0"]

    def train(steps: int, budget: float):  # noqa: ANN202 - a TrainSection
        return load_recipe(str(demo.recipe("sft-r0", "sft", shards, steps=steps, seq_len=512, lr=1.5e-4,
                                           budget_s=budget, min_steps=speedrun.sft_min_steps))).train

    got = train(speedrun.sft_steps, speedrun.sft_budget_s)
    assert (got.steps, got.time_budget_s, got.min_steps) == (200, 1140.0, 150)
    assert train(120, speedrun.sft_budget_s).min_steps == 120
    assert train(200, 0.0).min_steps == 0


def test_a_lora_size_writes_the_adapter_into_every_recipe(tmp_path) -> None:
    """``lora_r`` puts a [lora] section (alpha 2 r unless set) in the recipes the demo writes; 0 keeps full
    fine-tuning; a negative rank is refused by name."""
    shards = [tmp_path / "shards" / "sft0"]

    def lora(**kw):  # noqa: ANN202 - a LoraSection
        demo = Demo(replace(SIZES["speedrun"], **kw), tmp_path, tmp_path / "reports")
        return load_recipe(str(demo.recipe("sft-r0", "sft", shards, steps=10, seq_len=512, lr=1e-3))).lora

    assert (lora(lora_r=64).r, lora(lora_r=64).alpha) == (64, 128.0)
    assert lora(lora_r=16, lora_alpha=8.0).alpha == 8.0
    assert lora().r == 0
    with pytest.raises(ConfigError, match="lora_r"):
        replace(SIZES["speedrun"], lora_r=-1)


def test_runs_of_different_seeds_sample_different_round_problems() -> None:
    from flywheel.demo.__main__ import round_seed

    # seed 0 keeps the seeds its recorded runs used (1000 * round + difficulty)
    assert [round_seed(0, r, d) for r in (1, 2) for d in (1, 2)] == [1001, 1002, 2001, 2002]
    seeds = {(s, r, d): round_seed(s, r, d) for s in range(3) for r in range(1, 4) for d in (1, 2, 3)}
    assert len(set(seeds.values())) == len(seeds)  # no two (run seed, round, difficulty) share problems
    # and none is a round-0 seed (10 * run seed + difficulty) of any run
    assert not set(seeds.values()) & {10 * s + d for s in range(100) for d in (1, 2, 3)}


def _rounds_control():
    import importlib.util

    spec = importlib.util.spec_from_file_location("rounds_control", Path(__file__).parents[1] / "bench" /
                                                  "rounds_control.py")
    rc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rc)
    return rc


def test_the_share_arm_replays_each_rounds_accepted_samples_at_its_own_share(tmp_path, monkeypatch) -> None:
    rc = _rounds_control()
    demo = Demo(SIZES["full"], tmp_path, tmp_path / "reports")
    trained, scored = [], []
    monkeypatch.setattr(demo, "train", lambda name, recipe: trained.append((name, recipe)) or tmp_path / "runs" / name)
    monkeypatch.setattr(demo, "evaluate", lambda ckpt, problems, tag: scored.append((ckpt, tag)) or {
        "pass@1_strict": 0.25, "pass@1_lenient": 0.5, "per_difficulty": {}})
    # round 1 accepted 12 samples beside 3,817 references; 30 steps x 4 rows draw 120 rows: a share of 0.1 with
    # each sample drawn at most once is capped at 12 / 120 = 0.1, 0.4 would be capped there too
    out = rc.share_arm(demo, {"round": 1, "train_rows": 3829, "policy_rows": 12}, 0.4, 1, [])
    assert out["weights"] == pytest.approx([0.9, 0.1]) and out["pass@1_strict"] == 0.25
    recipe = load_recipe(str(trained[-1][1]))
    assert trained[-1][0] == "share0.4x1-r1" and recipe.model.path.endswith("sft-r0/final")
    assert [(Path(s.path).name, s.weight) for s in recipe.data.sources if s.weight > 0] == [
        ("sft0", pytest.approx(0.9)), ("policy-r1", pytest.approx(0.1))]
    assert (recipe.train.steps, recipe.train.lr) == (SIZES["full"].retrain_steps, SIZES["full"].lr_retrain)
    # round 2 continues the arm's own round-1 model, on round 2's shard; uncapped, the share is the one asked for
    out = rc.share_arm(demo, {"round": 2, "train_rows": 3844, "policy_rows": 27}, 0.15, 0, [])
    recipe = load_recipe(str(trained[-1][1]))
    assert out["weights"] == pytest.approx([0.85, 0.15]) and recipe.model.path.endswith("share0.15x0-r1/final")
    assert scored[-1] == (tmp_path / "runs" / "share0.15x0-r2" / "final", "share0.15x0-r2")
    # a round that accepted nothing has no arm (its retraining was the references alone)
    assert rc.share_arm(demo, {"round": 1, "train_rows": 3817, "policy_rows": 0}, 0.1, 1, []) is None
    assert len(trained) == 2


def test_the_flip_table_pairs_two_models_on_the_same_problems(tmp_path) -> None:
    rc = _rounds_control()

    def verdicts(tag: str, ok: list[bool], ids: str = "abcd") -> None:
        (tmp_path / "eval" / tag).mkdir(parents=True)
        (tmp_path / "eval" / tag / "verdicts.jsonl").write_text("".join(
            json.dumps({"id": i, "exec_status": "ok" if o != "crash" else "runtime_error",
                        "miss_class": None if o is True else "formulation"}) + "\n" for i, o in zip(ids, ok, strict=True)))

    verdicts("r0", [True, True, False, False])
    verdicts("r1", [True, False, True, "crash"])  # a crash is a miss whatever its miss class
    verdicts("ctl-r1", [False, False, True, True])
    table = rc.flip_table(tmp_path, [("r0", "r1"), ("r1", "ctl-r1")]).splitlines()
    assert table[2:] == ["| r0 | r1 | 1 | 1 | 1 |", "| r1 | ctl-r1 | 1 | 1 | 1 |"]
    verdicts("other", [True] * 4, ids="abce")
    with pytest.raises(ValueError, match="eval/r0 and eval/other scored different held-out problems"):
        rc.flip_table(tmp_path, [("r0", "other")])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_raw_arm_trains_on_every_policy_sample_with_the_rounds_weights(demo) -> None:
    rc = _rounds_control()
    work, reports = demo
    d = Demo(SMOKE, work, reports)
    out = rc.raw_arm(d, 1, [0.5, 0.5], d.heldout())
    # every policy sample of round 1 (the toy model's are all rejected), none of them a reference
    samples = _sql(work, "select count(*) as n, sum(case when accepted then 1 else 0 end) as ok from samples "
                         "where policy <> 'reference' and round = (select min(round) from samples "
                         "where policy <> 'reference')")[0]
    rows = pq.read_table(work / "shards" / "raw-r1" / "train.parquet").to_pylist()
    assert 0 < out["raw_policy_rows"] == len(rows) <= samples["n"]
    assert all(r["policy"] != "reference" for r in rows)
    assert out["raw_accepted_rows"] == sum(1 for r in rows if _sql(
        work, f"select accepted from samples where attempt_id = '{r['attempt_id']}'")[0]["accepted"])
    recipe = load_recipe(str(work / "recipes" / "raw-r1.toml"))
    assert [(Path(s.path).name, s.weight) for s in recipe.data.sources if s.weight > 0] == [
        ("sft0", 0.5), ("raw-r1", 0.5)]
    assert recipe.model.path.endswith("sft-r0/final")  # the round's own starting model
    assert 0.0 <= out["raw"]["pass@1_strict"] <= out["raw"]["pass@1_lenient"] <= 1.0


def test_the_report_says_when_a_time_budget_shaped_a_training(tmp_path: Path) -> None:
    """On a slower machine round 0's time budget binds before its steps (a 2-core EPYC fitted 93 of the speedrun's
    200 and scored 58.3% where ~150 steps score ~90%): the table shows the steps and a line says why, so a score
    from a cut run is not read as the size's score. A run that reached its steps gets no line."""
    def rnd(label: Any, steps: int | None = None, planned: int | None = None, budget: float = 0.0) -> dict[str, Any]:
        plan = {"total_steps": steps, "step_s": 11.7, "at_step": 20, "budget_s": budget} if budget else None
        return {"round": label, "train_rows": 574, "steps": steps, "steps_planned": planned, "budget_plan": plan,
                "pass@1_strict": 0.5, "pass@1_lenient": 0.6, "per_family": {"diet": {"pass@1_strict": 0.5}},
                "miss_classes": {"code": 3}}

    settings = {"init": "smollm2", "families": ["diet"], "heldout_problems": 60, "heldout_difficulties": [1],
                "heldout_in_training_store": 0, "template": "code_only", "api": "gurobipy", "render_style": "compact",
                "cpus": 2, "load_at_start": 0.1}
    results = {"size": "speedrun", "settings": settings, "wall_s": 1.0,
               "rounds": [rnd("base"), rnd(0, 94, 200, 1140.0), rnd(1, 36, 36), rnd(2, 20, 36)]}
    text = write_rounds_table(results, tmp_path).read_text()
    # ... and one that its floor (sft_min_steps) kept training past the budget says so, with what would have fit
    floor = rnd(0, 150, 200, 1140.0) | {"budget_plan": {"total_steps": 150, "step_s": 11.5, "at_step": 20,
                                                        "budget_s": 1140.0, "fit_steps": 94, "min_steps": 150}}
    floored = write_rounds_table(results | {"rounds": [floor]}, tmp_path).read_text()
    assert ("Round 0 trained 150 steps, past its 1140 s time budget: 94 fit on this machine (11.5 s a step), and "
            "the budget never cuts below sft_min_steps = 150.") in floored
    assert "| round 0 | 574 | 94 |" in text
    assert "Round 0 trained 94 of its 200 steps: its 1140 s time budget (sft_budget_s) bound first" in text
    assert "Round 2 trained 20 of its 36 steps: it stopped early." in text
    assert "Round 1 trained" not in text and "Zero-shot trained" not in text
    table = [line for line in text.split("## Strict")[0].splitlines() if line.startswith("|")]
    assert len(table) == 6 and max(map(len, table)) <= 80  # readable in an 80-column terminal
    # the header says what trained the model: full fine-tuning unless a LoRA rank is set (then merged, as loaded)
    assert "Model: smollm2; families: 1;" in text
    lora = write_rounds_table(results | {"settings": settings | {"lora_r": 64, "lora_alpha": 0.0}}, tmp_path)
    assert "Model: smollm2 (LoRA r=64, alpha 128, merged); families: 1;" in lora.read_text()
