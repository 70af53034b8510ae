"""The rounds' control arms: what the same retraining gives without the policy's samples, or without the contracts.

A demo round continues the previous model for ``retrain_steps`` on round 0's references plus the accepted policy
samples. Part of any gain is just more steps on the references. This script retrains each round's starting model
with the round's own recipe minus the policy shard (same steps, lr, seed, batch), scores it on the same held-out
problems with the demo's evaluator, and writes the two side by side::

    python bench/rounds_control.py --size rounds --work runs/flywheel-demo-rounds

``--raw`` adds the seed's claim (a) at one data size: each round retrained again from the same starting model with
the same recipe and the same weights (so the same number of policy rows drawn per step), but the policy shard
exported with ``--include-rejected``: every sample the policy wrote in the rounds so far, accepted or not, as a
pipeline without the contracts would keep them ("raw"). It compares with the round itself ("clean").

``--share S`` (with ``--repeats R``) adds an arm that retrains each round again with the same accepted samples at
another policy share of each batch (``retrain_mix``: S of each batch, capped so that each accepted sample is drawn at
most R times); round r's arm continues the arm of round r - 1, as the control does. It separates what the samples
teach from how hard they are replayed (the demo's ``policy_share`` / ``policy_repeats``).

Writes ``bench/results/rounds_control.{json,md}``. Run it after the demo (it reads the demo's recipes and results).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import machine  # noqa: E402
from flywheel.demo.__main__ import overrides  # noqa: E402
from flywheel.demo.run import Demo, retrain_mix  # noqa: E402
from flywheel.demo.sizes import SIZES  # noqa: E402

RESULTS = Path(__file__).parent / "results"
SCORES = ("pass@1_strict", "pass@1_lenient", "per_difficulty")


def solved(work: Path, tag: str) -> dict[str, bool]:
    """Held-out id -> solved under the strict rule, from ``eval/TAG/verdicts.jsonl``."""
    return {v["id"]: v["exec_status"] == "ok" and v["miss_class"] is None
            for v in map(json.loads, (work / "eval" / tag / "verdicts.jsonl").open())}


def family_table(work: Path, tags: list[str]) -> str:
    """Strict passes per family x difficulty of each evaluated model (``eval/TAG/verdicts.jsonl``)."""
    held = {h["id"]: h for h in map(json.loads, (work / "heldout.jsonl").open())}
    cells: dict[tuple[str, int], dict[str, str]] = {}
    for tag in tags:
        counts: dict[tuple[str, int], list[int]] = {}
        for pid, ok in solved(work, tag).items():
            c = counts.setdefault((held[pid]["family"], held[pid]["difficulty"]), [0, 0])
            c[0] += ok
            c[1] += 1
        for key, (ok, n) in counts.items():
            cells.setdefault(key, {})[tag] = f"{ok}/{n}"
    out = ["| family, difficulty | " + " | ".join(tags) + " |", "|---|" + "---:|" * len(tags)]
    out += [f"| {fam[:20]} d{d} | " + " | ".join(cells[(fam, d)].get(t, "-") for t in tags) + " |"
            for fam, d in sorted(cells)]
    return "\n".join(out)


def flip_table(work: Path, pairs: list[tuple[str, str]]) -> str:
    """Paired counts on the same held-out problems: solved by both models, by the first only, by the second only.
    Two arms a few points apart with many one-sided problems differ by churn, not by what their data taught."""
    out = ["| a | b | both | a only | b only |", "|---|---|---:|---:|---:|"]
    for a, b in pairs:
        sa, sb = solved(work, a), solved(work, b)
        if set(sa) != set(sb):
            raise ValueError(f"eval/{a} and eval/{b} scored different held-out problems")
        both = sum(sa[i] and sb[i] for i in sa)
        out.append(f"| {a} | {b} | {both} | {sum(sa[i] and not sb[i] for i in sa)} | "
                   f"{sum(sb[i] and not sa[i] for i in sa)} |")
    return "\n".join(out)


def raw_arm(demo: Demo, r: int, weights: list[float], problems: list) -> dict:
    """Round ``r`` again from the same starting model, the same recipe and weights, with the policy shard holding
    every policy sample of rounds 1..r (``--include-rejected``) instead of the accepted ones."""
    size, shards = demo.size, demo.work / "shards"
    listed = ", ".join(str(demo.stored_round(f"r{q}-d{d}")) for q in range(1, r + 1) for d in size.round_difficulties)
    raw = shards / f"raw-r{r}"
    manifest = demo.export("sft", raw, "--include-rejected", "--where",
                           f"policy <> 'reference' AND round IN ({listed})", "--mix", str(demo.all_train_mix()))
    ids = pq.read_table(raw / "train.parquet", columns=["attempt_id"]).column("attempt_id").to_pylist()
    quoted = ", ".join(f"'{i}'" for i in ids) or "''"
    accepted = json.loads(demo.cli("sql", "--store", str(demo.store), "--format", "json",
                                   f"select count(*) as n from samples where accepted and attempt_id in ({quoted})"))
    recipe = demo.recipe(f"raw-r{r}", "sft", [shards / "sft0", raw], weights=weights, steps=size.retrain_steps,
                         seq_len=size.sft_seq_len, lr=size.lr_retrain, init=demo.work / "runs" / f"sft-r{r - 1}" /
                         "final", seed=size.seed)
    res = demo.evaluate(demo.train(f"raw-r{r}", recipe) / "final", problems, f"raw-r{r}")
    return {"raw_policy_rows": manifest["counts"]["train"], "raw_accepted_rows": accepted[0]["n"],
            "raw": {k: res[k] for k in SCORES}}


def share_tag(share: float, repeats: float) -> str:
    return f"share{share:g}x{repeats:g}"


def share_arm(demo: Demo, entry: dict, share: float, repeats: float, problems: list) -> dict | None:
    """Round ``entry["round"]`` again with the demo's own policy shard of that round at another share of each batch,
    from the same arm's previous model (round 0's for round 1); None where the round accepted nothing."""
    r, size, policy_rows = entry["round"], demo.size, entry.get("policy_rows") or 0
    if not policy_rows:
        return None
    tag = share_tag(share, repeats)
    weights = retrain_mix(entry["train_rows"] - policy_rows, policy_rows, share,
                          size.retrain_steps * size.batch_rows, repeats)
    init = demo.work / "runs" / (f"{tag}-r{r - 1}" if r > 1 else "sft-r0") / "final"
    shards = [demo.work / "shards" / "sft0", demo.work / "shards" / f"policy-r{r}"]
    recipe = demo.recipe(f"{tag}-r{r}", "sft", shards, weights=weights, steps=size.retrain_steps,
                         seq_len=size.sft_seq_len, lr=size.lr_retrain, init=init, seed=size.seed)
    res = demo.evaluate(demo.train(f"{tag}-r{r}", recipe) / "final", problems, f"{tag}-r{r}")
    return {"share": share, "repeats": repeats, "weights": weights, **{k: res[k] for k in SCORES}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="rounds", choices=sorted(SIZES))
    parser.add_argument("--work", type=Path, default=Path("runs/flywheel-demo-rounds"))
    parser.add_argument("--reports", type=Path, default=Path("reports/flywheel/rounds"))
    parser.add_argument("--name", default="rounds_control")
    parser.add_argument("--raw", action="store_true", help="also the raw arm (accepted and rejected samples)")
    parser.add_argument("--max-round", type=int, default=0, help="the demo's rounds up to this one only (0 = all)")
    parser.add_argument("--share", type=float, default=None,
                        help="also an arm at this policy share of each retraining batch (0 = in proportion)")
    parser.add_argument("--repeats", type=float, default=4.0,
                        help="the --share arm's cap: each accepted sample drawn at most this often (0 = no cap)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="the same --set overrides the demo ran with (e.g. --set seed=1)")
    args = parser.parse_args()
    size = overrides(SIZES[args.size], args.settings)
    import torch

    torch.set_num_threads(size.threads)  # the in-process greedy generation, as the demo sets it
    demo = Demo(size, args.work, args.reports)
    problems = demo.heldout()
    demo_results = json.loads((args.reports / "results.json").read_text())
    ran = demo_results.get("settings", {}).get("seed", 0)
    if ran != size.seed:
        raise SystemExit(f"error: {args.reports / 'results.json'} is of a demo run with seed {ran}, not {size.seed}: "
                         f"pass the demo's --set overrides (--set seed={ran})")
    rows, share_chain = [], True
    for entry in demo_results["rounds"]:
        r = entry["round"]
        if not isinstance(r, int) or r < 1 or (args.max_round and r > args.max_round):
            continue
        # The round's recipe without the policy shard; round r's control continues the control of round r - 1.
        init = args.work / "runs" / (f"ctl-r{r - 1}" if r > 1 else "sft-r0") / "final"
        recipe = demo.recipe(f"ctl-r{r}", "sft", [args.work / "shards" / "sft0"], steps=size.retrain_steps,
                             seq_len=size.sft_seq_len, lr=size.lr_retrain, init=init, seed=size.seed)
        model = demo.train(f"ctl-r{r}", recipe)
        ctl = demo.evaluate(model / "final", problems, f"ctl-r{r}")
        row = {"round": r, "policy_rows": entry.get("policy_rows"), "data_weights": entry.get("data_weights"),
               "with_policy": {k: entry[k] for k in SCORES}, "replay_only": {k: ctl[k] for k in SCORES}}
        if args.raw and len(entry.get("data_weights") or []) == 2:
            row.update(raw_arm(demo, r, entry["data_weights"], problems))
        if args.share is not None and share_chain:
            # a round that accepted nothing ends the arm's chain (its later rounds would have no model to start from)
            arm = share_arm(demo, entry, args.share, args.repeats, problems)
            share_chain = arm is not None
            if arm:
                row["share_arm"] = arm
        rows.append(row)
    base = next(e for e in demo_results["rounds"] if e["round"] == 0)
    out = {"size": args.size, "work": str(args.work), "round0": {k: base[k] for k in ("pass@1_strict",
                                                                                    "per_difficulty")},
           "rounds": rows, "machine": machine(), "settings": args.settings,
           "command": shlex.join(["python", "bench/rounds_control.py", *sys.argv[1:]])}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=2) + "\n")
    diffs = sorted(base["per_difficulty"])
    head = "| model | strict | " + " | ".join(f"d{d}" for d in diffs) + " |"
    lines = [head, "|---|---:|" + "---:|" * len(diffs)]

    def row(name: str, res: dict) -> str:
        cells = " | ".join(f"{res['per_difficulty'][d]['pass@1_strict']:.1%}" for d in diffs)
        return f"| {name} | {res['pass@1_strict']:.1%} | {cells} |"

    lines.append(row("round 0", base))
    for x in rows:
        lines.append(row(f"round {x['round']} (policy rows {x['policy_rows']})", x["with_policy"]))
        lines.append(row(f"round {x['round']} control (replay only)", x["replay_only"]))
        if "raw" in x:
            lines.append(row(f"round {x['round']} raw ({x['raw_policy_rows']} rows, rejected too)", x["raw"]))
        if "share_arm" in x:
            a = x["share_arm"]
            lines.append(row(f"round {x['round']} policy share {a['weights'][1]:.2f}", a))
    tags = ["r0"] + [f"{arm}r{x['round']}" for x in rows for arm in ("", "ctl-", "raw-") if arm != "raw-" or "raw" in x]
    tags += [f"{share_tag(args.share, args.repeats)}-r{x['round']}" for x in rows if "share_arm" in x]
    pairs = [(f"r{x['round'] - 1}", f"r{x['round']}") for x in rows]
    pairs += [(f"r{x['round']}", t) for x in rows for t in tags if t.endswith(f"-r{x['round']}")]
    lines += ["", flip_table(args.work, pairs), "", family_table(args.work, tags)]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
