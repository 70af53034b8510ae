"""A real TRL ``GRPOTrainer`` run on CPU whose reward is ``flywheel.rewards.solver_reward`` through a running
``flywheel sandbox serve``: a tiny random Llama with a tokenizer trained here (``training.tokenizer``), no hub
download. The mechanics are what is tested: every step's completions are executed by the service, the rewards are
logged to the store with the step, and the trainer reports the mean reward per step. (A random 2-layer model
writes no program, so its rewards are 0; ``tests/test_rewards.py`` covers correct, wrong and infeasible answers.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("trl")

from test_sandbox_serve import Server  # noqa: E402

from flywheel.store import Store  # noqa: E402

PROGRAM = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=4, name="x"); y = m.addVar(ub=3, name="y")
m.addConstr(x + y <= 5, name="c")
m.setObjective(3 * x + 2 * y, gp.GRB.MAXIMIZE)
m.optimize()
"""


@pytest.mark.slow
def test_grpo_steps_through_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import flywheel.rewards as rewards
    from datasets import Dataset
    from training.tokenizer import train_tokenizer

    server = Server(tmp_path, "--workers", "2")
    store = tmp_path / "store"
    try:
        monkeypatch.setenv("FLYWHEEL_SANDBOX_URL", server.url)
        monkeypatch.setenv("FLYWHEEL_REWARD_STORE", str(store))
        monkeypatch.setenv("FLYWHEEL_POLICY", "tiny-llama")
        monkeypatch.setenv("FLYWHEEL_POLICY_CHECKPOINT", "random-init-seed0")
        monkeypatch.setenv("FLYWHEEL_REWARD_FORMAT", "0.1")
        questions = [f"Maximise 3x + 2y with x + y <= {c}, x <= 4, y <= 3. Write gurobipy code." for c in (5, 6)]
        tok = train_tokenizer([PROGRAM, *questions] * 20, vocab_size=300)
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=256, bos_token_id=tok.bos_token_id,
                                             eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
        data = Dataset.from_list([{"prompt": [{"role": "user", "content": q}], "answer": a, "problem_id": f"q{i}"}
                                  for i, (q, a) in enumerate(zip(questions, ["14", "15"], strict=True))] * 4)
        steps: list[dict] = []

        class Record(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
                if logs and "reward" in logs:
                    steps.append({"step": state.global_step, "reward": logs["reward"]})

        args = GRPOConfig(output_dir=str(tmp_path / "grpo"), use_cpu=True, max_steps=3, per_device_train_batch_size=4,
                          num_generations=4, max_completion_length=24, logging_steps=1, report_to=[],
                          save_strategy="no", learning_rate=1e-3, bf16=False, seed=0, dataloader_num_workers=0)
        trainer = GRPOTrainer(model=model, reward_funcs=rewards.solver_reward, args=args, train_dataset=data,
                              processing_class=tok, callbacks=[Record()])
        trainer.train()
        with capsys.disabled():
            print("\nGRPO mean reward per step:", json.dumps(steps))
        assert [s["step"] for s in steps] == [1, 2, 3]
        assert all(0.0 <= s["reward"] <= 1.1 for s in steps)  # match 1.0 + format 0.1 at most
        with Store.open(store, create=False) as st:
            rows = st.query("SELECT policy, checkpoint_hash, sampling_json FROM attempts").to_pylist()
            executed = st.count("executions")
        assert len(rows) == 3 * 4  # every completion of every step was scored and logged
        assert {r["policy"] for r in rows} == {"rl:tiny-llama"}
        assert {r["checkpoint_hash"] for r in rows} == {"random-init-seed0"}
        logged_steps = sorted({json.loads(r["sampling_json"])["step"] for r in rows})
        assert logged_steps == [0, 1, 2]  # TRL scores a step's rollouts before it increments global_step
        assert server.metric("flywheel_sandbox_requests_total") > 0
        del executed  # a random model's text rarely holds a program: executions may be 0
    finally:
        server.stop()
        os.environ.pop("FLYWHEEL_SANDBOX_URL", None)
