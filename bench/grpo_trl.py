"""A real TRL GRPO run on CPU whose reward is ``flywheel.rewards.solver_reward`` through ``flywheel sandbox serve``,
with a policy that writes programs, so the rewards carry signal (``tests/test_rewards_trl.py`` tests the mechanics
with a random model, whose rewards are all 0).

Policy: a tiny Llama (2 layers, hidden 64) with a tokenizer trained here (``training.tokenizer``), warm-started by a
short SFT on one question and its gurobipy program (cap 5, optimum 14). GRPO then samples 4 completions per prompt
for two questions: the trained one (answer 14) and one it was not trained on (cap 6, answer 15), so a copied
program earns 1 on the first and 0 on the second. Every reward call goes through the service and is logged to a
store; the mean reward per step is reported. No hub download.

    nice -n 10 .venv/bin/python bench/grpo_trl.py [--sft-steps 120] [--grpo-steps 4]

Writes bench/results/grpo_trl.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import machine, versions  # noqa: E402
from sandbox_serve import start_server, stop  # noqa: E402

PROGRAM = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=4, name="x"); y = m.addVar(ub=3, name="y")
m.addConstr(x + y <= {cap}, name="c")
m.setObjective(3 * x + 2 * y, gp.GRB.MAXIMIZE)
m.optimize()
"""
QUESTION = "Maximise 3x + 2y with x + y <= {cap}, x <= 4, y <= 3. Write gurobipy code."


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sft-steps", type=int, default=120)
    ap.add_argument("--grpo-steps", type=int, default=4)
    args = ap.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import flywheel.rewards as rewards
    from datasets import Dataset
    from flywheel.store import Store
    from training.tokenizer import train_tokenizer

    reply = "```python\n" + PROGRAM.format(cap=5) + "```"
    questions = [QUESTION.format(cap=c) for c in (5, 6)]
    tok = train_tokenizer([reply, *questions] * 20, vocab_size=400)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=512, bos_token_id=tok.bos_token_id,
                                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    prompt = tok.apply_chat_template([{"role": "user", "content": questions[0]}], add_generation_prompt=True,
                                     tokenize=False)
    ids = tok(prompt + reply + "<|im_end|>", return_tensors="pt")["input_ids"]
    labels = ids.clone()
    labels[:, :len(tok(prompt)["input_ids"])] = -100
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    t0 = time.perf_counter()
    for _ in range(args.sft_steps):
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    sft = {"steps": args.sft_steps, "final_loss": float(loss.detach()), "seconds": time.perf_counter() - t0}
    print(f"SFT warm start: {args.sft_steps} steps, loss {float(loss.detach()):.4f}, {sft['seconds']:.0f} s", flush=True)

    proc, url, _ = start_server(2)
    steps: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(FLYWHEEL_SANDBOX_URL=url, FLYWHEEL_REWARD_STORE=f"{tmp}/store", FLYWHEEL_POLICY="tiny-sft",
                          FLYWHEEL_POLICY_CHECKPOINT=f"sft-{args.sft_steps}")
        try:
            class Record(TrainerCallback):
                def on_log(self, a, state, control, logs=None, **kw):  # noqa: ANN001
                    if logs and "reward" in logs:
                        steps.append({"step": state.global_step, "reward_mean": logs["reward"],
                                      "reward_std": logs.get("reward_std"), "step_time_s": logs.get("step_time")})
                        print(f"step {state.global_step}: mean reward {logs['reward']:.3f}", flush=True)

            data = Dataset.from_list([{"prompt": [{"role": "user", "content": q}], "answer": a, "problem_id": f"q{i}"}
                                      for i, (q, a) in enumerate(zip(questions, ["14", "15"], strict=True))] * 8)
            cfg = GRPOConfig(output_dir=f"{tmp}/grpo", use_cpu=True, max_steps=args.grpo_steps,
                             per_device_train_batch_size=8, num_generations=4, max_completion_length=ids.shape[1],
                             logging_steps=1, report_to=[], save_strategy="no", learning_rate=1e-4, bf16=False,
                             seed=0, temperature=1.0)
            t1 = time.perf_counter()
            GRPOTrainer(model=model, reward_funcs=rewards.solver_reward, args=cfg, train_dataset=data,
                        processing_class=tok, callbacks=[Record()]).train()
            grpo_s = time.perf_counter() - t1
            with Store.open(f"{tmp}/store", create=False) as st:
                logged = st.query("SELECT count(*) AS n, count(e.attempt_id) AS executed FROM attempts a "
                                  "LEFT JOIN executions e USING (attempt_id)").to_pylist()[0]
        finally:
            stop(proc)
    out = {"date": datetime.datetime.now(datetime.UTC).isoformat(), "machine": machine(),
           "versions": versions("trl", "transformers", "torch"), "sft": sft, "grpo_seconds": grpo_s,
           "steps": steps, "logged_attempts": logged["n"], "logged_executions": logged["executed"]}
    print(f"logged {logged['n']} attempts ({logged['executed']} executed) to the store; GRPO {grpo_s:.0f} s")
    path = ROOT / "bench" / "results" / "grpo_trl.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
