"""``bench/family_transfer_public.py``: the interval it prints and the run it picks for each row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.family_transfer_public import largest, wilson  # noqa: E402


def test_wilson_interval_is_honest_at_zero_and_brackets_the_rate() -> None:
    lo, hi = wilson(0, 245)
    assert lo == 0.0 and 0.01 < hi < 0.02  # 0 of 245 still allows ~1.5%
    lo, hi = wilson(2, 245)
    assert lo < 2 / 245 < hi and 0.001 < lo and hi < 0.03
    assert wilson(0, 0) == (0.0, 0.0)


def test_the_full_run_wins_else_the_longest_prefix(tmp_path: Path) -> None:
    def run(name: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({}))

    assert largest(tmp_path, "sft-16-mamo_easylp-all") is None
    run("sft-16-mamo_easylp-64")
    run("sft-16-mamo_easylp-480")
    (tmp_path / "sft-16-mamo_easylp-999").mkdir()  # started, never finished: no summary
    run("sft-16-mamo_easylp")  # the 20-item run of an older layout: not a prefix run of this name
    assert largest(tmp_path, "sft-16-mamo_easylp-all").name == "sft-16-mamo_easylp-480"
    run("sft-16-mamo_easylp-all")
    assert largest(tmp_path, "sft-16-mamo_easylp-all").name == "sft-16-mamo_easylp-all"
