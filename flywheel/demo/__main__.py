"""``python -m flywheel.demo [--size full|smoke] [--work DIR] [--reports DIR] [--fresh]``: the whole loop."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flywheel.demo.plots import plot_all, write_table
from flywheel.demo.run import Demo, final_val, val_curve
from flywheel.demo.sizes import SIZES

ROUND0 = 1  # the store numbers rounds from 1: the generator-only round is round 1, policy round r is round r + 1


def rows(shard: Path) -> int:
    return pq.read_metadata(shard / "train.parquet").num_rows


def run(size_name: str, work: Path, reports: Path, fresh: bool = False) -> dict[str, Any]:
    size = SIZES[size_name]
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    demo = Demo(size, work, reports)
    import torch

    torch.set_num_threads(size.threads)  # in-process generation (see DemoSize.threads)
    t0 = time.perf_counter()
    load = os.getloadavg()[0]

    demo.say("round 0: generators -> ground truth -> reference programs -> sandbox -> contracts -> store")
    demo.round0()
    sh = work / "shards"
    demo.export("cpt", sh / "cpt0")
    demo.export("sft", sh / "sft0")
    problems = demo.heldout()
    overlap = demo.heldout_overlap(problems)
    tok = demo.tokenizer([sh / "cpt0", sh / "sft0"])

    demo.say("CPT from scratch then SFT from it, beside SFT from random init (same tokenizer, data and SFT steps)")
    save_every = max(1, size.sft_steps // 4)

    def cpt_then_sft() -> tuple[Path, Path]:
        cpt = demo.train("cpt", demo.recipe("cpt", "cpt", [sh / "cpt0"], steps=size.cpt_steps,
                                            seq_len=size.cpt_seq_len, lr=size.lr_cpt, tokenizer=tok))
        return cpt, demo.train("sft-r0", demo.recipe("sft-r0", "sft", [sh / "sft0"], steps=size.sft_steps,
                                                     seq_len=size.sft_seq_len, lr=size.lr_sft, init=cpt / "final",
                                                     save_every=save_every))

    def random_init() -> tuple[Path, dict[str, Any]]:
        rand = demo.train("sft-random", demo.recipe("sft-random", "sft", [sh / "sft0"], steps=size.sft_steps,
                                                    seq_len=size.sft_seq_len, lr=size.lr_sft, tokenizer=tok))
        return rand, demo.evaluate(rand / "final", problems, "random")

    (cpt, sft0), (rand, rand_eval) = demo.side_by_side(cpt_then_sft, random_init)

    demo.say("evaluate round 0 (unseen seeds) and the copy-rate curve")
    rounds = [{"round": 0, "model": "runs/sft-r0", "train_rows": rows(sh / "sft0"),
               **demo.evaluate(sft0 / "final", problems, "r0")}]
    curve = demo.copy_curve(sft0, problems, "r0curve")

    model = sft0
    for r in range(1, size.flywheel_rounds + 1):
        demo.say(f"flywheel round {r}: self-distillation through hf:{model / 'final'}")
        marker = work / "store" / f"round{r}.done"
        if not marker.exists():
            t = time.perf_counter()
            demo.cli("run-round", "--store", str(work / "store"), "--policy", f"hf:{model / 'final'}",
                     "--samples", str(size.round_samples), "--temperature", str(size.round_temperature),
                     "--problems", str(size.round_problems), "--families", ",".join(size.families),
                     "--seed", str(r), "--api", size.api, "--difficulty", str(size.difficulty),
                     "--infeasible-share", "0", "--workers", str(size.workers), "--config", str(demo.policy_config()),
                     "--no-progress")
            marker.write_text("ok\n")
            demo.stage(f"round{r}", time.perf_counter() - t)
        # Self-distillation: the round-0 generator data plus the policy's accepted samples of every round so far
        # (the new problems' own reference programs stay out, so the gain is the policy's, not more generator data).
        shard = demo.export("sft", sh / f"sft-r{r}", "--where", f"policy <> 'reference' OR round = {ROUND0}")
        model = demo.train(f"sft-r{r}", demo.recipe(f"sft-r{r}", "sft", [sh / f"sft-r{r}"], steps=size.retrain_steps,
                                                    seq_len=size.sft_seq_len, lr=size.lr_sft / 2,
                                                    init=model / "final"))
        rounds.append({"round": r, "model": f"runs/sft-r{r}", "train_rows": shard["counts"]["train"],
                       **demo.evaluate(model / "final", problems, f"r{r}")})

    demo.say("(a) contract-cleaned vs raw self-distillation data at three sizes, each fine-tuning the round-0 model")
    # raw: what an unfiltered flywheel would train on (every policy sample, the ones the contracts rejected too);
    # clean: the contract-accepted ones. Each subsample takes the policy's samples first, then generator references.
    where = f"policy <> 'reference' OR round = {ROUND0}"
    raw = sh / "raw"
    demo.export("sft", raw, "--include-rejected", "--where", where)
    clean = sh / "clean"
    demo.export("sft", clean, "--where", where)
    rejected = _rejected_ids(demo)
    jobs = []
    for n in size.ablation_sizes:
        for kind, shard in (("clean", clean), ("raw", raw)):
            sub = demo.subsample(shard, n, sh / f"{kind}-{n}")
            name = f"a-{kind}-{n}"
            jobs.append((kind, sub, name, demo.recipe(name, "sft", [sub], steps=size.ablation_steps,
                                                      seq_len=size.sft_seq_len, lr=size.lr_sft / 2,
                                                      init=sft0 / "final")))

    def ablate(job: tuple[str, Path, str, Path]) -> dict[str, Any]:
        kind, sub, name, recipe = job
        out = demo.train(name, recipe)
        ev = demo.evaluate(out / "final", problems[: size.ablation_eval], name)
        return {"data": kind, "rows": rows(sub), "rejected_rows": _count_in(sub, rejected),
                "policy_rows": _count_policy(sub), "val_loss_heldout": final_val(out), **_ev(ev)}

    ablation = demo.map_parallel(ablate, jobs)

    demo.say("benchmark items (nl4opt)")
    bench = demo.bench(model / "final")

    from transformers import AutoConfig, AutoModelForCausalLM

    params = sum(p.numel() for p in AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(cpt / "final"))
                 .parameters())
    results = demo.results | {
        "settings": {"families": list(size.families), "difficulty": size.difficulty, "api": size.api,
                     "arch": size.arch, "params": params, "heldout_problems": size.heldout_problems,
                     "heldout_seed": size.heldout_seed, "heldout_in_training_store": overlap,
                     "model_overrides": size.model_overrides, "tokenizer_vocab": size.tokenizer_vocab,
                     "sft_seq_len": size.sft_seq_len, "lr_sft": size.lr_sft, "max_tokens": size.max_tokens,
                     "ablation_eval": size.ablation_eval, "cpt_steps": size.cpt_steps, "sft_steps": size.sft_steps,
                     "retrain_steps": size.retrain_steps, "ablation_steps": size.ablation_steps,
                     "batch_rows": size.batch_rows, "round0_problems": size.round0_problems,
                     "round_problems": size.round_problems, "round_samples": size.round_samples,
                     "template": "code_only", "cpus": os.cpu_count(), "load_at_start": round(load, 1)},
        "c_rounds": rounds,
        "b_cpt_vs_random": {
            "cpt_init": {"steps": size.sft_steps, "val_curve": val_curve(sft0),
                         "val_loss_heldout": final_val(sft0), **_ev(rounds[0])},
            "random_init": {"steps": size.sft_steps, "val_curve": val_curve(rand),
                            "val_loss_heldout": final_val(rand), **_ev(rand_eval)}},
        "a_clean_vs_raw": ablation,
        "copy_curve": [{k: p[k] for k in ("step", "copy_rate", "pass@1_strict", "items")} for p in curve],
        "benchmark": bench,
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    reports.mkdir(parents=True, exist_ok=True)
    plot_all(results, reports)
    write_table(results, reports)
    demo.say(f"done in {results['wall_s']:.0f}s; results in {reports}")
    return results


def _ev(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("pass@1_strict", "pass@1_lenient", "copy_rate", "has_code")}


def _rejected_ids(demo: Demo) -> set[str]:
    """Attempt ids of the samples the contracts did not accept."""
    out = demo.cli("sql", "--store", str(demo.store), "--format", "json",
                   "select attempt_id from samples where not coalesce(accepted, false)")
    return {r["attempt_id"] for r in json.loads(out)}


def _count_policy(shard: Path) -> int:
    """Training rows of ``shard`` written by a policy (not a generator's reference program)."""
    return sum(p != "reference" for p in pq.read_table(shard / "train.parquet", columns=["policy"])
               .column("policy").to_pylist())


def _count_in(shard: Path, ids: set[str]) -> int:
    """How many training rows of ``shard`` are samples with one of ``ids`` (lineage: the attempt id column)."""
    return sum(a in ids for a in pq.read_table(shard / "train.parquet", columns=["attempt_id"])
               .column("attempt_id").to_pylist())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m flywheel.demo", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--work", type=Path, default=Path("runs/flywheel-demo"))
    parser.add_argument("--reports", type=Path, default=Path("reports/flywheel"))
    parser.add_argument("--fresh", action="store_true", help="delete the work directory first")
    args = parser.parse_args()
    run(args.size, args.work, args.reports, args.fresh)


if __name__ == "__main__":
    main()
