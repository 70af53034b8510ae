"""CPT checkpoint selection by proxy SFT.

A CPT checkpoint's own loss says little about how good a starting point it is for SFT. So, for each checkpoint of a
CPT run: a short SFT on a small subset of the SFT shard (the same recipe, steps and data for every candidate), then
greedy Pass@1 on held-out generated problems (seeds unseen in training): the model's completion is run through the
sandbox (``solvers.sandbox.run_batch``) and the objective the solver really reported is compared with the problem's
verified ground truth (``solvers.ground_truth.solve_ground_truth``). The best Pass@1 wins; ties (common early on,
when every candidate scores 0) go to the lower proxy-SFT held-out loss.

The comparison is ``contracts.tolerance``'s ``strict`` rule, |a - b| <= 1e-6 (|b| + 1) (the ground-truth agreement
tolerance), and an infeasible ground truth is matched only by a solve that concludes infeasible.

It sits with evaluation, not in ``training/``: it generates problems, runs the sandbox and scores, all layers above
the trainer, which it drives (``training.trainer.run``) as one more caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from contracts.extract import extract_code
from contracts.tolerance import compare
from flywheel.curation.synthetic import SYSTEM
from flywheel.generators.base import derive_seed, family_names, generate_problem
from solvers.errors import ConfigError
from solvers.ground_truth import solve_ground_truth
from solvers.sandbox import Program, run_batch
from training.config import RecipeConfig
from training.trainer import run


def held_out_items(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` generated problems with verified ground truth: id, messages (system + user), expected answer."""
    fams = family_names()
    items = []
    for i in range(n):
        p = generate_problem(fams[i % len(fams)], derive_seed(seed, i), 1)
        gt = solve_ground_truth(p.ir)
        if gt.disputed:
            continue
        answer: float | str | None = "infeasible" if gt.status.value == "infeasible" else gt.objective
        items.append({"id": p.problem_id, "answer": answer,
                      "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": p.question}]})
    return items


def passes(execution: Any, answer: float | str | None) -> bool:
    final = execution.final_solve
    if final is None or answer is None:
        return False
    if answer == "infeasible":
        return final.status.value == "infeasible"
    if final.objective is None:
        return False
    return compare(final.objective, float(answer), "strict").match


@torch.no_grad()
def complete(model_dir: Path, items: list[dict[str, Any]], max_new_tokens: int = 512) -> list[str]:
    """Greedy completions of each item's chat prompt by the checkpoint in ``model_dir``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    outs = []
    for item in items:
        ids = tok.apply_chat_template(item["messages"], add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True)["input_ids"]
        gen = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=tok.eos_token_id,
                             pad_token_id=tok.pad_token_id)
        outs.append(tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True))
    return outs


def pass_at_1(completions: list[str], items: list[dict[str, Any]]) -> list[bool]:
    programs = [Program(program_id=f"sel-{i}", code=extract_code(text) or text) for i, text in enumerate(completions)]
    return [passes(ex, it["answer"]) for ex, it in zip(run_batch(programs), items, strict=True)]


def select_checkpoint(cpt_run: Path, sft_data: str, held_out: int, steps: int, seed: int,
                      out: Path, max_new_tokens: int = 512) -> dict[str, Any]:
    """Proxy-SFT every ``checkpoints/step-N`` of ``cpt_run`` and score it; ``best`` names the winner."""
    candidates = sorted((cpt_run / "checkpoints").glob("step-*"), key=lambda d: int(d.name.split("-")[1]))
    if not candidates:
        raise ConfigError("CPT run has no checkpoints/step-N", culprit=str(cpt_run))
    items = held_out_items(held_out, seed)
    rows = []
    for ckpt in candidates:
        recipe = RecipeConfig.model_validate({
            "name": f"proxy-{ckpt.name}", "kind": "sft", "model": {"path": str(ckpt)},
            "data": {"sources": [{"path": sft_data, "name": "sft"}], "seq_len": 512, "val_rows": 8},
            "train": {"steps": steps, "batch_rows": 8, "micro_batch": 8, "lr": 1e-3, "warmup_steps": 2,
                      "eval_every": 0}})
        summary = run(recipe, out / ckpt.name)
        ok = pass_at_1(complete(Path(summary["checkpoint"]), items, max_new_tokens), items)
        rows.append({"checkpoint": ckpt.name, "val_loss": summary["val_loss/sft"], "items": len(ok),
                     "passed": sum(ok), "pass_at_1": sum(ok) / max(1, len(ok))})
    best = min(rows, key=lambda r: (-r["pass_at_1"], r["val_loss"]))
    return {"rows": rows, "best": best["checkpoint"], "best_path": str(cpt_run / "checkpoints" / best["checkpoint"])}
