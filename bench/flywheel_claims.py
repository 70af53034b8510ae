"""The seed's three claims, measured on Pass@1 (strict, greedy, problems from unseen seeds).

(a) contract-cleaned vs raw SFT data at three data sizes: the same volume, raw with the policy's rejected programs
    mixed in (each subsample takes the policy's samples first, then generator references);
(b) CPT (on the CPT shard: formulation text and programs) then SFT vs SFT alone, same SFT steps and data;
(c) Pass@1 by flywheel round: round-0 SFT, then the policy samples new problems, accepted samples join the data,
    SFT again (the round-0 model of each seed is (b)'s "SFT alone" of that seed).

Every point is ``--seeds`` training seeds (subsample seed and training seed both change); the table and plot show
mean and spread (min-max). Held-out problems are checked unseen by text (exact question) and by structure (the
curation's structural hash of the IR) against every problem in the training store; colliding ones are dropped.

The setting comes from a demo size (``flywheel.demo.sizes``): ``full`` is the claims' intended setting (all
families, difficulty 1-3, SmolLM2) and takes hours; ``smoke`` (a random-init tiny model, two families) proves the
pipeline end to end in minutes and measures nothing about the claims.

    python bench/flywheel_claims.py --size full --seeds 3 --data-sizes 100,200,400 --sft-steps 100
    python bench/flywheel_claims.py --size smoke --seeds 3 --data-sizes 2,4,6 --sft-steps 1 --label tiny

Writes bench/results/flywheel_claims[_LABEL].json and .png.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine  # noqa: E402

from flywheel.demo.run import Demo  # noqa: E402
from flywheel.demo.sizes import SIZES  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def spread(values: list[float]) -> dict[str, Any]:
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values),
            "std": statistics.pstdev(values) if len(values) > 1 else 0.0, "n": len(values), "values": values}


def unseen(demo: Demo, problems: list[Any]) -> tuple[list[Any], dict[str, int]]:
    """The held-out problems whose question text and IR structure are both absent from the training store."""
    from flywheel.curation.structural import structural_hash

    stored = json.loads(demo.cli("sql", "--store", str(demo.store), "--format", "json",
                                 "select question, ir_json from problems"))
    texts = {r["question"].strip() for r in stored}
    shapes = {structural_hash(_model(r["ir_json"])) for r in stored if r["ir_json"]}
    by_text = [p for p in problems if p.question.strip() in texts]
    by_shape = [p for p in problems if structural_hash(p.ir) in shapes]
    bad = {p.problem_id for p in by_text + by_shape}
    return [p for p in problems if p.problem_id not in bad], {"same_text": len(by_text),
                                                               "same_structure": len(by_shape)}


def _model(text: str) -> Any:
    from solvers.ir import Model

    return Model.model_validate_json(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="full", choices=sorted(SIZES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--data-sizes", default="100,200,400")
    ap.add_argument("--sft-steps", type=int, default=None, help="SFT steps of every (a)/(b)/(c) run")
    ap.add_argument("--cpt-steps", type=int, default=None, help="CPT steps in (b); default = SFT steps")
    ap.add_argument("--rounds", type=int, default=None, help="(c) rounds after round 0")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--label", default="", help="suffix of the results files (e.g. tiny)")
    args = ap.parse_args()
    size = SIZES[args.size]
    size = replace(size, sft_steps=args.sft_steps or size.sft_steps, rounds=args.rounds or size.rounds)
    steps, cpt_steps = size.sft_steps, args.cpt_steps or size.sft_steps
    data_sizes = [int(x) for x in args.data_sizes.split(",")]
    suffix = f"_{args.label}" if args.label else ""
    work = args.work or Path(f"runs/flywheel-claims-{args.size}{suffix}")
    work.mkdir(parents=True, exist_ok=True)
    demo = Demo(size, work, RESULTS)
    sh = work / "shards"
    t0 = time.perf_counter()

    base = demo.base_checkpoint()
    round0 = [demo.store_round(f"r0-d{d}", seed=d, difficulty=d, problems=size.round0_problems)
              for d in size.round0_difficulties]
    keep = f"policy <> 'reference' OR round IN ({', '.join(map(str, round0))})"
    demo.export("sft", sh / "sft0")
    demo.export("cpt", sh / "cpt0")
    tok = None if base else demo.tokenizer([sh / "sft0", sh / "cpt0"])
    problems, collisions = unseen(demo, demo.heldout())
    demo.say(f"{len(problems)} held-out problems unseen by text and structure ({collisions} dropped)")

    def sft(name: str, shard: Path, seed: int, init: Path | None, n_steps: int = steps, lr: float = size.lr_sft
            ) -> Path:
        return demo.train(name, demo.recipe(name, "sft", [shard], steps=n_steps, seq_len=size.sft_seq_len, lr=lr,
                                            init=init, tokenizer=tok, seed=seed))

    def score(run: Path, tag: str) -> float:
        return demo.evaluate(run / "final", problems, tag)["pass@1_strict"]

    seeds = list(range(args.seeds))
    # (b) and (c) round 0: SFT alone (from the initial checkpoint) and CPT then SFT, per seed.
    demo.say("(b) CPT then SFT vs SFT alone")

    def b_job(seed: int) -> dict[str, Any]:
        alone = sft(f"b-sft-s{seed}", sh / "sft0", seed, base)
        cpt = demo.train(f"b-cpt-s{seed}", demo.recipe(f"b-cpt-s{seed}", "cpt", [sh / "cpt0"], steps=cpt_steps,
                                                       seq_len=size.sft_seq_len, lr=size.lr_sft, init=base,
                                                       tokenizer=tok, seed=seed))
        after = sft(f"b-cptsft-s{seed}", sh / "sft0", seed, cpt / "final")
        return {"seed": seed, "sft_alone": score(alone, f"b-sft-s{seed}"),
                "cpt_then_sft": score(after, f"b-cptsft-s{seed}"), "alone_run": alone}

    b_runs = demo.map_parallel(b_job, seeds)

    # (c): rounds per seed, the policy of each seed sampling its own new problems.
    demo.say("(c) Pass@1 by round")

    def c_job(b: dict[str, Any]) -> dict[str, Any]:
        seed, model, curve, acc, mine = b["seed"], b["alone_run"], [b["sft_alone"]], [], []
        for r in range(1, size.rounds + 1):
            new = [demo.store_round(f"c-s{seed}-r{r}-d{d}", seed=100_000 * (seed + 1) + 1000 * r + d, difficulty=d,
                                    problems=size.round_problems, policy=f"hf:{model / 'final'}")
                   for d in size.round_difficulties]
            acc.append(demo.acceptance(new)["acceptance_rate"])
            mine += new  # this seed's policy rounds so far: its accepted samples accumulate, as in the demo
            rounds_sql = ", ".join(map(str, mine))
            shard = sh / f"c-s{seed}-r{r}"
            demo.export("sft", shard, "--where", f"round IN ({', '.join(map(str, round0))}) OR "
                        f"(policy <> 'reference' AND round IN ({rounds_sql}))")
            model = sft(f"c-s{seed}-r{r}", shard, seed, model / "final", size.retrain_steps, size.lr_retrain)
            curve.append(score(model, f"c-s{seed}-r{r}"))
        return {"seed": seed, "pass@1_by_round": curve, "acceptance_by_round": acc}

    c_runs = [c_job(b) for b in b_runs]  # sequential: each round's sampling already uses both cores

    # (a): clean vs raw data at three sizes; the policy data comes from every (c) round (all seeds).
    demo.say("(a) contract-cleaned vs raw SFT data")
    demo.export("sft", sh / "clean", "--where", keep)
    demo.export("sft", sh / "raw", "--include-rejected", "--where", keep)
    jobs = [(kind, n, seed) for n in data_sizes for kind in ("clean", "raw") for seed in seeds]

    def a_job(job: tuple[str, int, int]) -> dict[str, Any]:
        kind, n, seed = job
        sub = demo.subsample(sh / kind, n, sh / f"a-{kind}-{n}-s{seed}", seed=seed)
        run = sft(f"a-{kind}-{n}-s{seed}", sub, seed, base)
        import pyarrow.parquet as pq

        policy = pq.read_table(sub / "train.parquet", columns=["policy"]).column("policy").to_pylist()
        # rows_actual < rows when the shard is smaller than the asked size (a tiny store); policy_rows: samples of
        # the fine-tuned policy (in raw, the contract-rejected ones are among them)
        return {"data": kind, "rows": n, "seed": seed, "rows_actual": len(policy),
                "policy_rows": sum(p != "reference" for p in policy),
                "pass@1_strict": score(run, f"a-{kind}-{n}-s{seed}")}

    a_runs = demo.map_parallel(a_job, jobs)

    a = {f"{kind}-{n}": spread([r["pass@1_strict"] for r in a_runs if r["data"] == kind and r["rows"] == n])
         for n in data_sizes for kind in ("clean", "raw")}
    b = {k: spread([r[k] for r in b_runs]) for k in ("sft_alone", "cpt_then_sft")}
    c = {f"round {i}": spread([r["pass@1_by_round"][i] for r in c_runs]) for i in range(size.rounds + 1)}
    result = {"bench": "flywheel_claims", "label": args.label or "full", "size": args.size,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
              "settings": {"families": list(size.families), "init": size.init or f"random {size.arch}",
                           "seeds": args.seeds, "data_sizes": data_sizes, "sft_steps": steps, "cpt_steps": cpt_steps,
                           "retrain_steps": size.retrain_steps, "rounds": size.rounds,
                           "heldout_problems": len(problems), "heldout_dropped": collisions},
              "a_clean_vs_raw": a, "b_cpt_vs_sft": b, "c_by_round": c,
              "c_acceptance": [r["acceptance_by_round"] for r in c_runs], "runs": {"a": a_runs, "c": c_runs,
                                                                                  "b": [{k: v for k, v in r.items()
                                                                                         if k != "alone_run"}
                                                                                        for r in b_runs]},
              "wall_s": round(time.perf_counter() - t0, 1)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"flywheel_claims{suffix}.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    plot(result, RESULTS / f"flywheel_claims{suffix}.png")
    print(table(result))
    print(f"wrote {out}")


def table(r: dict[str, Any]) -> str:
    def cell(s: dict[str, Any]) -> str:
        return f"{s['mean']:.1%} [{s['min']:.0%}-{s['max']:.0%}]"

    lines = [f"flywheel claims ({r['label']}, size {r['size']}, {r['settings']['seeds']} seeds, "
             f"{r['settings']['heldout_problems']} held-out problems)", "(a) data      clean              raw"]
    for n in r["settings"]["data_sizes"]:
        lines.append(f"    {n:>5} rows  {cell(r['a_clean_vs_raw'][f'clean-{n}']):<18} "
                     f"{cell(r['a_clean_vs_raw'][f'raw-{n}'])}")
    lines.append(f"(b) SFT alone {cell(r['b_cpt_vs_sft']['sft_alone'])}; CPT then SFT "
                 f"{cell(r['b_cpt_vs_sft']['cpt_then_sft'])}")
    lines.append("(c) " + "; ".join(f"{k} {cell(v)}" for k, v in r["c_by_round"].items()))
    return "\n".join(lines)


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def err(s: dict[str, Any]) -> list[list[float]]:
        return [[s["mean"] - s["min"]], [s["max"] - s["mean"]]]

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    sizes = r["settings"]["data_sizes"]
    for kind, fmt in (("clean", "o-"), ("raw", "s--")):
        pts = [r["a_clean_vs_raw"][f"{kind}-{n}"] for n in sizes]
        axes[0].errorbar(sizes, [p["mean"] for p in pts], yerr=[[p["mean"] - p["min"] for p in pts],
                                                                [p["max"] - p["mean"] for p in pts]],
                         fmt=fmt, capsize=3, label=kind)
    axes[0].set(xlabel="SFT rows", ylabel="Pass@1 strict", title="(a) clean vs raw")
    axes[0].legend()
    for i, k in enumerate(("sft_alone", "cpt_then_sft")):
        s = r["b_cpt_vs_sft"][k]
        axes[1].bar(i, s["mean"], yerr=err(s), capsize=4)
    axes[1].set_xticks([0, 1], ["SFT alone", "CPT then SFT"])
    axes[1].set(title="(b) same SFT budget")
    rounds = list(r["c_by_round"].values())
    axes[2].errorbar(range(len(rounds)), [s["mean"] for s in rounds],
                     yerr=[[s["mean"] - s["min"] for s in rounds], [s["max"] - s["mean"] for s in rounds]],
                     fmt="o-", capsize=3)
    axes[2].set_xticks(range(len(rounds)))
    axes[2].set(xlabel="round", title="(c) Pass@1 by round")
    for ax in axes:
        ax.set_ylim(-0.02, 1.02)
    fig.suptitle(f"{r['label']}: mean and min-max over {r['settings']['seeds']} seeds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
