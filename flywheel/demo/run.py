"""The demo's stages, in order. Each stage writes its artefacts under the work directory and is skipped when they
already exist, so an interrupted run resumes where it stopped (``--fresh`` starts over).

Prompt alignment: every SFT shard is exported with ``--template code_only``, so its system and user turns are the
exact messages the ``hf:`` policy sends in ``run-round --policy`` and in evaluation (the same template and API), and
its assistant turn is the fenced program alone (what that template asks for).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.demo.metrics import copy_rate
from flywheel.demo.sizes import DemoSize, lora_alpha
from solvers.errors import ConfigError

TEMPLATE = "code_only"
HELDOUT = "heldout"
SAMPLE = "sample"  # policy_config's tag for the rounds' sampling
SUBSAMPLE_SEED = 7


class Demo:
    def __init__(self, size: DemoSize, work: Path, reports: Path, log: Any = None) -> None:
        self.size, self.work, self.reports = size, work, reports
        self.store = work / "store"
        self.flywheel = str(Path(sys.executable).with_name("flywheel"))
        # Stage times live in WORK/stages.json, so a resumed run still reports the times of the stages that an
        # earlier run of the same work directory did (a stage that runs again overwrites its own entry).
        done = work / "stages.json"
        self.results: dict[str, Any] = {"size": size.name,
                                        "stages": json.loads(done.read_text()) if done.exists() else {}}
        self.resumed = bool(self.results["stages"])
        self.log = log or sys.stderr
        self.t0 = time.perf_counter()

    # ---- plumbing -------------------------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        print(f"[demo {time.perf_counter() - self.t0:7.1f}s] {msg}", file=self.log, flush=True)

    def cli(self, *args: str) -> str:
        """Run ``flywheel ARGS`` (the public CLI); its stdout is returned, a failure stops the demo with its tail."""
        cmd = [self.flywheel, *args]
        self.say("$ flywheel " + " ".join(args))
        with (self.work / "commands.log").open("a") as fh:
            fh.write("flywheel " + " ".join(args) + "\n")
        env = {**os.environ, "OMP_NUM_THREADS": str(self.size.threads)}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"flywheel {args[0]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                               f"{proc.stderr[-3000:]}")
        return proc.stdout

    def stage(self, name: str, seconds: float) -> None:
        self.results["stages"][name] = round(seconds, 1)
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "stages.json").write_text(json.dumps(self.results["stages"], indent=1) + "\n")

    def policy_config(self, tag: str = "") -> Path:
        """The policy TOML for evaluating ``tag`` (the base model ``"base"`` gets ``zero_shot_max_tokens``), or for
        the rounds' sampling (``tag == SAMPLE``: ``round_hf_dtype`` and ``round_repeat_stop``; the contracts judge
        every sample, so a faster dtype costs at most some acceptance, while every evaluation stays in fp32)."""
        s = self.size
        max_tokens = (s.zero_shot_max_tokens if tag == "base" else 0) or s.max_tokens
        repeat_stop = s.zero_shot_repeat_stop if tag == "base" else s.round_repeat_stop if tag == SAMPLE else 0
        dtype = s.round_hf_dtype if tag == SAMPLE else "fp32"
        name = ("policy" + (f"-{max_tokens}" if max_tokens != s.max_tokens else "")
                + ("-base" if tag == "base" and repeat_stop else "") + ("-sample" if tag == SAMPLE else ""))
        path = self.work / f"{name}.toml"
        path.write_text(
            "# The demo's policy settings: the code-only template (the SFT shards are exported with it), greedy\n"
            "# evaluation, completions long enough for one program.\n"
            f"[policy]\ntemplate = \"{TEMPLATE}\"\nmax_tokens = {max_tokens}\nconcurrency = {s.batch_generate}\n"
            f"hf_dtype = \"{dtype}\"\n"
            + (f"repeat_stop = {repeat_stop}\n" if repeat_stop else "")
            + "[sandbox]\ntimeout_s = 30.0\ncpu_s = 30.0\n")
        return path

    # ---- data -----------------------------------------------------------------------------------------------
    def stored_round(self, tag: str) -> int | None:
        """The store round of the finished ``store_round`` called ``tag`` (its marker), or None."""
        marker = self.store / f"{tag}.round"
        return int(marker.read_text()) if marker.exists() else None

    def store_round(self, tag: str, *, seed: int, difficulty: int, problems: int, policy: str | None = None) -> int:
        """One ``flywheel run-round`` (resumable: a finished round is skipped by its marker); its store round."""
        s = self.size
        done = self.stored_round(tag)
        if done is not None:
            return done
        t = time.perf_counter()
        # Families start at a different one per difficulty, so rounds smaller than the family list still cover
        # every family across their difficulties.
        levels = s.round_difficulties if policy else s.round0_difficulties
        shift = (levels.index(difficulty) * problems if difficulty in levels else 0) % len(s.families)
        families = s.families[shift:] + s.families[:shift]
        args = ["run-round", "--store", str(self.store), "--problems", str(problems), "--families",
                ",".join(families), "--seed", str(seed), "--api", s.api, "--difficulty", str(difficulty),
                "--infeasible-share", "0", "--workers", str(s.workers), "--no-progress", "--format", "json"]
        if policy:
            args += ["--policy", policy, "--samples", str(s.round_samples), "--temperature",
                     str(s.round_temperature), "--config", str(self.policy_config(SAMPLE))]
        self.cli(*args)
        out = self.cli("sql", "--store", str(self.store), "--format", "json", "select max(round) as r from samples")
        number = int(json.loads(out)[0]["r"])
        marker = self.store / f"{tag}.round"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{number}\n")
        self.stage(f"round:{tag}", time.perf_counter() - t)
        return number

    def acceptance(self, store_rounds: Sequence[int]) -> dict[str, Any]:
        """The policy's samples in ``store_rounds``: how many, how many the contracts accepted, why the rest failed
        (the sandbox's execution status, and the contracts that failed on samples that did run)."""
        rounds = ", ".join(str(r) for r in store_rounds)
        where = f"s.policy <> 'reference' and s.round in ({rounds})"
        rows = json.loads(self.cli("sql", "--store", str(self.store), "--format", "json",
                                   "select count(*) as n, sum(case when s.accepted then 1 else 0 end) as ok "
                                   f"from samples s where {where}"))[0]
        by_exec = json.loads(self.cli(
            "sql", "--store", str(self.store), "--format", "json",
            "select e.status as status, count(*) as n from samples s join executions e using (attempt_id) "
            f"where {where} and not coalesce(s.accepted, false) group by 1 order by 2 desc"))
        by_contract = json.loads(self.cli(
            "sql", "--store", str(self.store), "--format", "json",
            "select v.contract as contract, count(distinct v.attempt_id) as n from samples s join verdicts v "
            f"using (attempt_id) where {where} and v.outcome = 'fail' group by 1 order by 2 desc"))
        n, ok = int(rows["n"] or 0), int(rows["ok"] or 0)
        return {"samples": n, "accepted": ok, "acceptance_rate": ok / n if n else 0.0,
                "rejected_by_exec_status": {r["status"]: int(r["n"]) for r in by_exec},
                "failed_contracts": {r["contract"]: int(r["n"]) for r in by_contract}}

    def export(self, stage: str, out: Path, *extra: str) -> dict[str, Any]:
        if not (out / "manifest.json").exists():
            args = ["export", "--store", str(self.store), "--stage", stage, "--out", str(out), "--no-decontam",
                    "--overwrite", "--format", "json"]
            if stage == "sft":
                args += ["--template", TEMPLATE]
            self.cli(*args, *extra)
        return json.loads((out / "manifest.json").read_text())

    def all_train_mix(self) -> Path:
        """A mix file holding no validation clusters out: the accepted policy samples are few and all of them are
        training data (the held-out problems measure the model)."""
        path = self.work / "mix-all-train.toml"
        path.write_text("# every cluster in the training split\nseed = 0\nvalidation = 0.0\n")
        return path

    def heldout(self) -> list[Any]:
        """Problems from unseen seeds with their ground truth: ``heldout_problems`` per held-out difficulty, the
        families in turn. Also written as a benchmark JSONL and as a weight-0 SFT shard (held-out val loss)."""
        from flywheel.generators.base import derive_seed, generate_problem
        from solvers.ground_truth import solve_ground_truth
        from solvers.render import render

        s = self.size
        path = self.work / "heldout.jsonl"
        problems = []
        rows = []
        for k, d in enumerate(s.heldout_difficulties):
            for i in range(s.heldout_problems):
                # Each difficulty continues where the previous one stopped in the family list: with fewer problems
                # per difficulty than families, every family is still held out at some difficulty.
                family = s.families[(k * s.heldout_problems + i) % len(s.families)]
                p = generate_problem(family, derive_seed(s.heldout_seed + d, i), d, 0.0)
                gt = solve_ground_truth(p.ir)
                problems.append(p.model_copy(update={"ground_truth": gt}))
                answer = gt.objective if gt.status.value == "optimal" else gt.status.value
                rows.append({"id": p.problem_id, "question": p.question, "answer": answer, "family": family,
                             "difficulty": d, "code": render(p.ir, s.api, p.question)})
        if path.exists():
            problems = _as_listed(problems, rows, path)
        else:
            path.write_text("".join(json.dumps({k: r[k] for k in ("id", "question", "answer", "family",
                                                                   "difficulty")}) + "\n" for r in rows))
        self._heldout_shard(rows)
        return problems

    def base_checkpoint(self) -> Path | None:
        """The initial checkpoint: ``init`` itself when it is an HF checkpoint folder, else ``flywheel models import
        INIT`` into the work directory (a GGUF file, ``smollm2``, ...); None: random init (from scratch)."""
        if not self.size.init:
            return None
        if (Path(self.size.init) / "config.json").exists():
            return Path(self.size.init)
        out = self.work / "base"
        if not (out / "config.json").exists():
            t = time.perf_counter()
            self.cli("models", "import", self.size.init, "--out", str(out), "--format", "json")
            self.stage("import", time.perf_counter() - t)
        return out

    def heldout_overlap(self, problems: Sequence[Any]) -> int:
        """How many held-out questions are also in the store (the training data's source): 0 means unseen."""
        held = {p.question.strip() for p in problems}
        out = self.cli("sql", "--store", str(self.store), "--format", "json", "select question from problems")
        return sum(r["question"].strip() in held for r in json.loads(out))

    def tokenizer(self, shards: Sequence[Path]) -> Path:
        """One tokenizer for every run (CPT, SFT from CPT, SFT from random init), trained on the round-0 shards, so
        the (b) comparison differs only in the initial weights."""
        from training.data import corpus_texts
        from training.tokenizer import train_tokenizer

        out = self.work / "tokenizer"
        if not (out / "tokenizer.json").exists():
            train_tokenizer(corpus_texts([str(p) for p in shards]), self.size.tokenizer_vocab).save_pretrained(out)
        return out

    def _heldout_shard(self, rows: list[dict[str, Any]]) -> None:
        """An SFT shard of the held-out problems with their reference programs: a weight-0 source in every SFT run,
        so each run reports ``val_loss/heldout`` on the same unseen-seed examples (never trained on)."""
        from flywheel.curation.formats import sft_row

        out = self.work / "shards" / HELDOUT
        if (out / "manifest.json").exists():
            return
        out.mkdir(parents=True, exist_ok=True)
        recs = [sft_row({"question": r["question"], "code": r["code"], "api": self.size.api,
                         "problem_id": r["id"], "family": r["family"], "attempt_id": r["id"],
                         "label_source": "heldout"}, template=TEMPLATE) for r in rows]
        table = pa.Table.from_pylist(recs)
        pq.write_table(table, out / "train.parquet")
        pq.write_table(table, out / "val.parquet")
        (out / "manifest.json").write_text(json.dumps({"stage": "sft", "source": "demo held-out problems",
                                                       "counts": {"train": len(recs), "val": len(recs)}}) + "\n")

    def subsample(self, shard: Path, n: int, out: Path, seed: int = SUBSAMPLE_SEED) -> Path:
        """``n`` training rows of ``shard``: every policy sample first (the flywheel's new data: in a raw shard the
        rejected ones are among them), then generator references, each drawn without replacement (seeded)."""
        import numpy as np

        if (out / "manifest.json").exists():
            return out
        out.mkdir(parents=True, exist_ok=True)
        train = pq.read_table(shard / "train.parquet")
        order = np.random.default_rng(seed).permutation(train.num_rows).tolist()
        policy = train.column("policy").to_pylist()
        order.sort(key=lambda i: policy[i] == "reference")  # stable: policy rows first, each part still shuffled
        pick = order[: min(n, train.num_rows)]
        pq.write_table(train.take(sorted(pick)), out / "train.parquet")
        shutil.copy(shard / "val.parquet", out / "val.parquet")
        (out / "manifest.json").write_text(json.dumps({"stage": "sft", "subsample_of": str(shard), "rows": n}) + "\n")
        return out

    # ---- training -------------------------------------------------------------------------------------------
    def recipe(self, name: str, kind: str, shards: Sequence[Path], *, steps: int, seq_len: int, lr: float,
               init: Path | None = None, tokenizer: Path | None = None, save_every: int = 0, seed: int = 0,
               weights: Sequence[float] | None = None, budget_s: float = 0.0, min_steps: int = 0) -> Path:
        """A recipe TOML: the training shard(s) at ``weights`` (default 1 each: a batch row is drawn from a shard
        with probability weight / sum) and, for SFT, the held-out shard at weight 0."""
        s = self.size
        weights = list(weights) if weights is not None else [1.0] * len(shards)
        if len(weights) != len(shards):
            raise ValueError(f"{len(shards)} shards but {len(weights)} weights")
        sources = [f'[[data.sources]]\npath = "{p}"\nname = "{"train" if i == 0 else f"train{i}"}"\n'
                   f"weight = {w!r}\n" for i, (p, w) in enumerate(zip(shards, weights, strict=True))]
        if kind == "sft":
            sources.append(f'[[data.sources]]\npath = "{self.work / "shards" / HELDOUT}"\nname = "{HELDOUT}"\n'
                           "weight = 0.0\n")
        warmup = max(1, steps // 10)
        lora = (f"[lora]\nr = {s.lora_r}\nalpha = {lora_alpha(s.lora_r, s.lora_alpha)!r}\n\n" if s.lora_r else "")
        overrides = "" if init else ", ".join(f"{k} = {json.dumps(v)}" for k, v in s.model_overrides.items())
        text = (f'name = "{name}"\nkind = "{kind}"\n\n[model]\narch = "{s.arch}"\npath = "{init or ""}"\n'
                f"overrides = {{{overrides}}}\n\n"
                f'[tokenizer]\npath = "{tokenizer or ""}"\nvocab_size = {s.tokenizer_vocab}\n\n'
                f"[data]\nseq_len = {seq_len}\nval_rows = {s.val_rows}\nlength_groups = {s.length_groups}\n\n"
                f"[train]\nsteps = {steps}\nbatch_rows = {s.batch_rows}\nmicro_batch = {s.micro_batch or s.batch_rows}\n"
                f"lr = {lr}\nfreeze_layers = {s.freeze_layers}\n"
                f"freeze_embeddings = {str(s.freeze_embeddings).lower()}\ncompile = {str(s.compile).lower()}\n"
                f'schedule = "{s.schedule}"\n'
                f"warmup_steps = {warmup}\neval_every = {s.eval_every or steps}\nsave_every = {save_every}\n"
                f"time_budget_s = {float(budget_s)!r}\nmin_steps = {min(min_steps, steps) if budget_s else 0}\n"
                f"seed = {seed}\n\n" + lora
                + "\n".join(sources))
        path = self.work / "recipes" / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def train(self, name: str, recipe: Path) -> Path:
        """Train ``name`` (a finished run is skipped), or extend it: a finished run with fewer steps than its recipe
        now asks for, and no time budget, resumes from its final checkpoint (optimizer, schedule and data position
        included) to the new step count, keeping its warm-up; a wsd run resumes from the end of its plateau
        instead (``decay_checkpoint``: its decay is redone at the new end). So a run on a slow machine grows in
        resumable slices: ``--set sft_budget_s=0 --set sft_steps=N`` again with a larger N. Its evaluations are then
        redone and the earlier ones kept beside them (``evaluate``)."""
        from training.trainer import decay_checkpoint

        out = self.work / "runs" / name
        if not (out / "final" / "config.json").exists():
            t = time.perf_counter()
            if out.exists():
                shutil.rmtree(out)
            self.cli("train", "--recipe", str(recipe), "--out", str(out), "--format", "json")
            self.stage(f"train:{name}", time.perf_counter() - t)
            return out
        extend = self.extension(name, recipe)
        if extend is not None:
            t = time.perf_counter()
            # the plateau's end only while the settings still ask for wsd (a cosine extension continues from final)
            start = (decay_checkpoint(out) if self.size.schedule == "wsd" else None) or out / "final"
            self.say(f"{name}: extending {extend['from']} steps to {extend['to']} from {start.name}")
            self.cli("train", "--recipe", str(recipe), "--resume", str(start), "--out", str(out),
                     "--set", f"train.warmup_steps={extend['warmup']}", "--format", "json")
            before = self.results["stages"].get(f"train:{name}", 0.0)
            self.stage(f"train:{name}", before + time.perf_counter() - t)
        return out

    def extension(self, name: str, recipe: Path) -> dict[str, int] | None:
        """How the finished run ``name`` would be extended to ``recipe``'s steps (``from``, ``to``, the run's own
        ``warmup``), or None when it already has them or a time budget decides its length. A run that a later
        round was built on is never extended (that round would stay on the old weights): a clear error instead."""
        from training.config import load_recipe
        from training.trainer import STATE_FILE

        out = self.work / "runs" / name
        wanted = load_recipe(str(recipe)).train
        trained = steps_trained(out) or 0
        if wanted.time_budget_s or wanted.steps <= trained:
            return None
        later = self._built_on(name)
        if later:
            raise ConfigError(f"{name} has {trained} steps and the settings now ask for {wanted.steps}, but "
                              f"{', '.join(later)} already built on it: extending it would leave those on the old "
                              f"weights; use a new --work (or --fresh), or keep the steps at {trained}",
                              culprit=str(out))
        if not (out / "final" / STATE_FILE).exists():
            raise ConfigError(f"{name} cannot be extended to {wanted.steps} steps: its final checkpoint has no "
                              f"{STATE_FILE} (optimizer and data position) to resume from", culprit=str(out / "final"))
        ran = json.loads((out / "config.json").read_text())
        return {"from": trained, "to": wanted.steps, "warmup": int(ran["recipe"]["train"]["warmup_steps"])}

    def _built_on(self, name: str) -> list[str]:
        """What later rounds made from run ``sft-rK``: their store rounds (``r{J}-d*``) and runs (``sft-r{J}``), J > K."""
        def round_of(text: str) -> int:
            return int(text) if text.isdigit() else -1

        k = round_of(name.removeprefix("sft-r"))
        if k < 0:
            return []
        stored = [p for p in self.store.glob("r*-d*.round") if round_of(p.name[1:].split("-")[0]) > k]
        runs = [p for p in (self.work / "runs").glob("sft-r*") if round_of(p.name.removeprefix("sft-r")) > k]
        return sorted(str(p.relative_to(self.work)) for p in (*stored, *runs))

    def map_parallel(self, fn: Callable[[Any], Any], jobs: Sequence[Any]) -> list[Any]:
        """``fn`` over independent jobs, ``size.parallel`` at a time (each training is its own process, one torch
        thread each; in-process generation holds the GIL only between torch calls)."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.size.parallel) as pool:
            return list(pool.map(fn, jobs))

    def side_by_side(self, *chains: Callable[[], Any]) -> list[Any]:
        """Independent chains of stages at once (e.g. CPT then SFT beside a random-init SFT)."""
        return self.map_parallel(lambda chain: chain(), chains)

    # ---- evaluation -----------------------------------------------------------------------------------------
    def generate(self, checkpoint: Path, problems: Sequence[Any], tag: str) -> list[Any]:
        """Greedy completions of ``problems`` by the checkpoint through the hf: policy (same template and API)."""
        from flywheel.config import load_config
        from flywheel.policies.run import generate_attempts

        settings = load_config(self.policy_config(tag)).policy
        run = generate_attempts(problems, f"hf:{checkpoint}", samples=1, temperature=0.0, api=self.size.api,
                                round_id=0, cache_dir=self.work / "cache" / tag, progress=False, settings=settings)
        return run.attempts

    def evaluate(self, checkpoint: Path, problems: Sequence[Any], tag: str) -> dict[str, Any]:
        """Pass@1 (strict and ORLM-lenient, via ``flywheel eval score``) and copy rate on held-out problems."""
        out = self.work / "eval" / tag
        summary_file = out / "result.json"
        _set_aside_if_stale(out, summary_file, checkpoint)
        if summary_file.exists():
            result = json.loads(summary_file.read_text())
            missing = {"per_difficulty", "miss_anatomy"} - set(result)  # written before these tables existed
            if "per_difficulty" in missing:
                result["per_difficulty"] = _per_difficulty(out / "verdicts.jsonl", problems)
            if "miss_anatomy" in missing:
                result["miss_anatomy"] = _miss_anatomy(out, problems, self.size.api)
            if missing:
                summary_file.write_text(json.dumps(result, indent=2) + "\n")
            return result
        t = time.perf_counter()
        attempts = self.generate(checkpoint, problems, tag)
        by_id = {p.problem_id: p for p in problems}
        out.mkdir(parents=True, exist_ok=True)
        lines = []
        rates = []
        for a in attempts:
            p = by_id[a.problem_id]
            gt = p.ground_truth
            answer = gt.objective if gt.status.value == "optimal" else gt.status.value
            lines.append({"id": a.problem_id, "answer": answer, "completion": a.response, "solver_api": self.size.api,
                          "benchmark": p.family})
            rate = copy_rate(p.question, a.code or a.response)
            if rate is not None:
                rates.append(rate)
        comp = out / "completions.jsonl"
        comp.write_text("".join(json.dumps(x) + "\n" for x in lines))
        self.cli("eval", "score", "--completions", str(comp), "--out", str(out), "--format", "json")
        summary = json.loads((out / "summary.json").read_text())
        summary = summary.get("summary", summary)
        overall = summary.get("overall", summary.get("all"))
        per_family = {fam: {"items": e["items"], "pass@1_strict": e["rules"]["strict"]["pass@1"],
                            "pass@1_lenient": e["rules"]["orlm_lenient"]["pass@1"]}
                      for fam, e in sorted(summary.items()) if fam not in ("overall", "all")}
        result = {"checkpoint": str(checkpoint), "items": len(lines),
                  "pass@1_strict": overall["rules"]["strict"]["pass@1"],
                  "pass@1_lenient": overall["rules"]["orlm_lenient"]["pass@1"],
                  "copy_rate": sum(rates) / len(rates) if rates else 0.0,
                  "has_code": sum(bool(a.code) for a in attempts) / max(1, len(attempts)),
                  "miss_classes": overall.get("miss_classes", {}), "per_family": per_family,
                  "per_difficulty": _per_difficulty(out / "verdicts.jsonl", problems),
                  "miss_anatomy": _miss_anatomy(out, problems, self.size.api),
                  "generate_s": round(time.perf_counter() - t, 1)}
        summary_file.write_text(json.dumps(result, indent=2) + "\n")
        _mark_evaluated(out, checkpoint)
        self.stage(f"eval:{tag}", time.perf_counter() - t)
        return result

    def benchmarks(self, checkpoint: Path, tag: str) -> dict[str, Any]:
        """Zero-shot transfer: Pass@1 of ``checkpoint`` on each of ``size.benchmarks`` (``flywheel eval run``, the
        first ``bench_limit`` items, 0 = all), from ``../shared/benchmarks/NAME``; a missing one is reported."""
        results: dict[str, Any] = {}
        for name in self.size.benchmarks:
            out = self.work / "eval" / f"{tag}-{name}"
            _set_aside_if_stale(out, out / "summary.json", checkpoint)
            if not (out / "summary.json").exists():
                bench = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / name
                if not bench.exists():
                    results[name] = {"skipped": f"{bench} not found"}
                    continue
                limit = ["--limit", str(self.size.bench_limit)] if self.size.bench_limit else []
                self.cli("eval", "run", "--policy", f"hf:{checkpoint}", "--benchmark", str(bench), *limit, "--api",
                         self.size.api, "--config", str(self.policy_config(tag)), "--out", str(out), "--format",
                         "json")
                _mark_evaluated(out, checkpoint)
            rules = _rules(out / "summary.json")
            results[name] = {"items": _overall(out / "summary.json").get("items"),
                             "pass@1_strict": rules["strict"]["pass@1"],
                             "pass@1_lenient": rules["orlm_lenient"]["pass@1"]}
        return results


def retrain_mix(reference_rows: int, policy_rows: int, share: float, rows_drawn: int = 0,
                max_repeats: float = 0) -> list[float]:
    """Sampling weights of (round 0's references, the accepted policy samples) for a round's retraining: the policy's
    rows get ``share`` of each batch, or a share in proportion to the rows when ``share`` is 0, but never so much that
    a retraining drawing ``rows_drawn`` rows sees each accepted sample more than ``max_repeats`` times on average (a
    handful of accepted programs at half of every batch would be memorised); no policy rows, no policy source."""
    if policy_rows <= 0:
        return [1.0]
    share = share or policy_rows / (policy_rows + reference_rows)
    if rows_drawn and max_repeats:
        share = min(share, max_repeats * policy_rows / rows_drawn)
    return [1.0 - share, share]


def _as_listed(problems: list[Any], rows: list[dict[str, Any]], path: Path) -> list[Any]:
    """A work directory keeps the held-out problems it listed first (``heldout.jsonl``). Regenerated from their
    seeds, the same instances (family, difficulty, ground truth) take the listed id and wording, so a generator's
    rephrasing since (and its spec-version bump, which changes the ids) never changes what a resumed or extended
    run is scored on; any other instance is an error naming the first that differs."""
    listed = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def same(now: dict[str, Any], then: dict[str, Any]) -> bool:
        a, b = now["answer"], then["answer"]
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        return ((now["family"], now["difficulty"]) == (then["family"], then["difficulty"])
                and (math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) if numbers else a == b))

    if len(listed) != len(rows):
        raise ConfigError(f"these settings give {len(rows)} held-out problems, {len(listed)} are listed here: run "
                          "with the settings this work directory was made with, or a new --work", culprit=str(path))
    for i, (now, then) in enumerate(zip(rows, listed, strict=True)):
        if not same(now, then):
            raise ConfigError(f"these settings give other held-out problems than listed here: item {i + 1} is "
                              f"{now['family']} at difficulty {now['difficulty']} with answer {now['answer']}, "
                              f"listed {then.get('family')} at difficulty {then.get('difficulty')} with answer "
                              f"{then.get('answer')}; run with the settings this work directory was made with, or a "
                              "new --work", culprit=str(path))
    return [p if p.problem_id == then["id"] and p.question == then["question"]
            else p.model_copy(update={"problem_id": then["id"], "question": then["question"]})
            for p, then in zip(problems, listed, strict=True)]


EVALUATED = "checkpoint.json"  # beside an evaluation: the checkpoint folder it scored (``final`` resolved)


def _mark_evaluated(out: Path, checkpoint: Path) -> None:
    (out / EVALUATED).write_text(json.dumps({"checkpoint": str(checkpoint),
                                             "resolved": str(checkpoint.resolve())}) + "\n")


def _set_aside_if_stale(out: Path, result: Path, checkpoint: Path) -> None:
    """An evaluation of other weights than ``checkpoint``'s current ones (its run was extended since) moves to
    ``OUT@step-N`` (the folder it scored; for evaluations from before the record, its date), so it is redone and
    the earlier figures are kept. Without the record, an evaluation older than the weights is the stale one."""
    if not result.exists():
        return
    record = out / EVALUATED
    if record.exists():
        scored = Path(json.loads(record.read_text())["resolved"])
        if scored == checkpoint.resolve():
            return
        label = scored.name
    else:
        weights = list(checkpoint.resolve().glob("*.safetensors"))
        if not weights or result.stat().st_mtime >= max(w.stat().st_mtime for w in weights):
            return
        label = time.strftime("%Y%m%dT%H%M%S", time.gmtime(result.stat().st_mtime))
    aside, n = out.with_name(f"{out.name}@{label}"), 1
    while aside.exists():  # never over an earlier one
        n += 1
        aside = out.with_name(f"{out.name}@{label}.{n}")
    out.rename(aside)


def _per_difficulty(verdicts: Path, problems: Sequence[Any]) -> dict[str, Any]:
    """Strict and lenient Pass@1 by the held-out problems' difficulty, from ``eval score``'s verdicts."""
    level = {p.problem_id: str(p.difficulty) for p in problems}
    out: dict[str, dict[str, Any]] = {}
    for line in verdicts.read_text().splitlines() if verdicts.exists() else []:
        v = json.loads(line)
        e = out.setdefault(level.get(v["id"], "?"), {"items": 0, "strict": 0, "lenient": 0})
        e["items"] += 1
        e["strict"] += bool(v["passed"].get("strict"))
        e["lenient"] += bool(v["passed"].get("orlm_lenient"))
    return {d: {"items": e["items"], "pass@1_strict": e["strict"] / e["items"],
                "pass@1_lenient": e["lenient"] / e["items"]} for d, e in sorted(out.items())}


def _miss_anatomy(out: Path, problems: Sequence[Any], api: str) -> dict[str, int]:
    """What the strict misses of one evaluation got wrong (``flywheel.evaluate.anatomy``): each completion's data
    against the reference program rendered for the same problem."""
    from contracts.extract import extract_code
    from flywheel.evaluate.anatomy import miss_anatomy
    from solvers.render import render

    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    missed = {v["id"] for v in verdicts if not v["passed"].get("strict")}
    programs = {c["id"]: extract_code(c["completion"]) or "" for c in
                map(json.loads, (out / "completions.jsonl").read_text().splitlines()) if c["id"] in missed}
    references = {p.problem_id: render(p.ir, api, p.question) for p in problems if p.problem_id in missed}
    return miss_anatomy(verdicts, programs, references)


def _overall(summary_file: Path) -> dict[str, Any]:
    """The overall block of an eval summary.json (``{"summary": {"all": ...}}`` or ``{"all": ...}``)."""
    data = json.loads(summary_file.read_text())
    data = data.get("summary", data)
    for key in ("all", "overall"):  # eval score writes "all", eval run per benchmark plus "overall"
        if key in data:
            return data[key]
    return data


def _rules(summary_file: Path) -> dict[str, Any]:
    return _overall(summary_file)["rules"]


def read_metrics(run: Path) -> list[dict[str, Any]]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def val_curve(run: Path, source: str = HELDOUT) -> list[tuple[int, float]]:
    return [(m["step"], m[f"val_loss/{source}"]) for m in read_metrics(run) if f"val_loss/{source}" in m]


def steps_trained(run: Path) -> int | None:
    """The last step a run logged (a time-budgeted run may stop before its recipe's steps)."""
    rows = read_metrics(run)
    return int(rows[-1]["step"]) if rows else None


def budget_plan(run: Path) -> dict[str, Any] | None:
    """What a time-budgeted run planned at the end of its warm-up (``[train] time_budget_s``), or None."""
    return next((m["budget_plan"] for m in read_metrics(run) if "budget_plan" in m), None)


def final_val(run: Path, source: str = HELDOUT) -> float | None:
    curve = val_curve(run, source)
    return curve[-1][1] if curve else None
