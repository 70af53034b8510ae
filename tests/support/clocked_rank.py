"""One torchrun rank whose trainer clock is a function of its own step count and rank, for testing what a time
budget decides across ranks whatever this machine's speed:

    python -m torch.distributed.run --standalone --nproc_per_node 2 -m tests.support.clocked_rank \
        SECONDS_PER_STEP_OF_RANK_0,SECONDS_PER_STEP_OF_RANK_1 SPEC OUT DEVICE [RESUME]

Rank r's ``time.perf_counter`` in ``training.trainer`` reads ``rate[r] * trainer.step``; the rest is
``training.launch``'s own rank entry point.
"""

from __future__ import annotations

import os
import sys
import types

import training.trainer as trainer_mod
from training.launch import _rank_main

rates = [float(x) for x in sys.argv[1].split(",")]
rate = rates[int(os.environ["RANK"])]
made: list = []
_post_init = trainer_mod.Trainer.__post_init__


def _recording_post_init(self) -> None:  # noqa: ANN001
    made.append(self)
    _post_init(self)


trainer_mod.Trainer.__post_init__ = _recording_post_init
trainer_mod.time = types.SimpleNamespace(perf_counter=lambda: rate * made[-1].step if made else 0.0)
_rank_main(sys.argv[2:])
