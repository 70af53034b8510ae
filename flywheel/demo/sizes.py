"""Demo sizes: ``smoke`` (the test's toy loop, about a minute) and ``full`` (the committed run).

Design for copying (issue 9): the first curriculum stage only (difficulty 1, three LP families with the shortest
programs), one solver API, reference programs whose data block follows the question's order of numbers
(``solvers.render.order``), a tokenizer where digits and names are the same ids in question and code, a dense
rotary-position decoder, short code-only outputs, greedy decoding at evaluation, and as many SFT rows as the
generators make in the time (a round of generator problems is cheap next to training).

Model class: a dense Qwen3 (``qwen3_tiny`` widened by ``model_overrides``) rather than the tiny MoE. Copying is
attention work; at this size a router splits an already small number of tokens over experts, each expert's FFN
sees a fraction of the data, and the sort-and-dispatch costs CPU time per step that the dense FFN does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _dense() -> dict[str, Any]:
    return {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 32, "intermediate_size": 384}


@dataclass(frozen=True)
class DemoSize:
    name: str
    families: tuple[str, ...] = ("production_planning", "transportation", "diet")
    difficulty: int = 1
    api: str = "gurobipy"
    round0_problems: int = 900
    heldout_problems: int = 24
    heldout_seed: int = 90_001  # unseen: the rounds use seeds 0, 1, 2, ...
    tokenizer_vocab: int = 2048  # a larger vocabulary packs the boilerplate code into fewer tokens; digits stay single
    arch: str = "qwen3_tiny"
    model_overrides: dict[str, Any] = field(default_factory=_dense)
    cpt_steps: int = 40
    cpt_seq_len: int = 1024
    sft_steps: int = 160
    sft_seq_len: int = 1024
    batch_rows: int = 4
    lr_cpt: float = 3e-3
    lr_sft: float = 3e-3
    eval_every: int = 40
    val_rows: int = 4
    flywheel_rounds: int = 1
    round_problems: int = 12
    round_samples: int = 2
    round_temperature: float = 0.7
    retrain_steps: int = 20
    max_tokens: int = 900  # the longest reference program of these families is ~700 tokens
    batch_generate: int = 8
    copy_probe: int = 6  # held-out questions generated from each intermediate SFT checkpoint (copy-rate curve)
    ablation_sizes: tuple[int, ...] = (30, 60, 120)
    ablation_steps: int = 10
    ablation_eval: int = 6  # held-out problems each (a) model writes programs for
    bench_limit: int = 5
    workers: int = 2
    # torch threads per process. Measured on the shared 2-core machine at load ~15: one forward+backward of the
    # demo MoE on 2 x 512 tokens took 38-58 s with 2 threads (OpenMP threads spinning against other processes) and
    # 2.7 s with 1 thread.
    threads: int = 1
    parallel: int = 2  # independent training runs at once (2 cores)


SIZES: dict[str, DemoSize] = {
    "full": DemoSize(name="full"),
    "smoke": DemoSize(
        name="smoke", families=("transportation", "diet"), round0_problems=6, heldout_problems=2, tokenizer_vocab=400,
        model_overrides={}, cpt_steps=2, cpt_seq_len=512, sft_steps=2, sft_seq_len=1536, val_rows=2, batch_rows=2,
        eval_every=1, round_problems=2, round_samples=1, retrain_steps=1, max_tokens=24, batch_generate=4,
        copy_probe=2, ablation_sizes=(2, 4), ablation_steps=1, ablation_eval=1, bench_limit=2,
    ),
}
