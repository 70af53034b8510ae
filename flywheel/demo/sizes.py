"""Demo sizes: ``smoke`` (the test's toy loop, about a minute) and ``full`` (the committed run).

Design for copying (issue 9): a curriculum's first stage only (difficulty 1, three LP families with the shortest
programs), one solver API, a digit-split BPE tokenizer and a rotary-position MoE (``qwen3_moe_demo``), short
code-only outputs, greedy decoding at evaluation, many small steps rather than few large ones.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoSize:
    name: str
    families: tuple[str, ...] = ("production_planning", "transportation", "diet")
    difficulty: int = 1
    api: str = "gurobipy"
    round0_problems: int = 90
    heldout_problems: int = 15
    heldout_seed: int = 90_001  # unseen: the rounds use seeds 0, 1, 2, ...
    tokenizer_vocab: int = 2048  # a larger vocabulary packs the boilerplate code into fewer tokens; digits stay single
    arch: str = "qwen3_moe_demo"
    cpt_steps: int = 120
    cpt_seq_len: int = 1024
    sft_steps: int = 160
    sft_seq_len: int = 1280
    batch_rows: int = 2  # many small steps rather than few large ones
    lr_cpt: float = 5e-3
    lr_sft: float = 3e-3
    eval_every: int = 40
    val_rows: int = 8
    flywheel_rounds: int = 1
    round_problems: int = 12
    round_samples: int = 2
    round_temperature: float = 0.7
    retrain_steps: int = 40
    max_tokens: int = 1000
    batch_generate: int = 8
    copy_probe: int = 6  # held-out questions generated from each intermediate SFT checkpoint (copy-rate curve)
    ablation_sizes: tuple[int, ...] = (8, 16, 32)
    ablation_steps: int = 16
    bench_limit: int = 10
    workers: int = 2
    # torch threads per process. Measured on the shared 2-core machine at load ~15: one forward+backward of the
    # demo MoE on 2 x 512 tokens took 38-58 s with 2 threads (OpenMP threads spinning against other processes) and
    # 2.7 s with 1 thread.
    threads: int = 1
    parallel: int = 3  # independent training runs at once (the ablations; CPT-init and random-init SFT)


SIZES: dict[str, DemoSize] = {
    "full": DemoSize(name="full"),
    "smoke": DemoSize(
        name="smoke", families=("transportation", "diet"), round0_problems=6, heldout_problems=2, tokenizer_vocab=400,
        cpt_steps=2, cpt_seq_len=512, sft_steps=2, sft_seq_len=1536, val_rows=2, batch_rows=2, eval_every=1, round_problems=2,
        round_samples=1, retrain_steps=1, max_tokens=24, batch_generate=4, copy_probe=2, ablation_sizes=(2, 4),
        ablation_steps=1, bench_limit=2,
    ),
}
