"""``python -m flywheel.demo.evaluate CHECKPOINT --tag TAG [--size full] [--work DIR] [--set KEY=VALUE ...]``.

Scores any HF checkpoint on a demo work directory's held-out problems exactly as the demo scores its rounds (the
same problems, policy settings, greedy fp32 generation, ``flywheel eval score``, per family, per difficulty, miss
classes and anatomy), into ``WORK/eval/TAG/result.json``: e.g. a round-0 run trained further by hand
(``flywheel train --resume``) or one from another work directory. The size and ``--set`` values must give the work
directory's held-out problems (checked against ``WORK/heldout.jsonl``, whose wording and ids they keep).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from flywheel.demo.__main__ import overrides
from flywheel.demo.run import Demo
from flywheel.demo.sizes import SIZES
from solvers.errors import ConfigError, FlywheelError

SHOWN = ("items", "pass@1_strict", "pass@1_lenient", "copy_rate", "miss_classes", "per_difficulty", "miss_anatomy",
         "generate_s")


def evaluate(checkpoint: Path, tag: str, size_name: str, work: Path, settings: list[str]) -> dict:
    if not (checkpoint / "config.json").exists():
        raise ConfigError("not an HF checkpoint folder (no config.json)", culprit=str(checkpoint))
    listed = work / "heldout.jsonl"
    if not listed.exists():
        raise ConfigError("no held-out problems here: run the demo in this work directory first", culprit=str(listed))
    import torch

    size = overrides(SIZES[size_name], settings)
    torch.set_num_threads(size.threads)
    demo = Demo(size, work, work / "reports")
    problems = demo.heldout()  # the problems listed in WORK/heldout.jsonl, or an error naming the first other one
    return demo.evaluate(checkpoint, problems, tag)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m flywheel.demo.evaluate", description=__doc__)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--tag", required=True, help="results go to WORK/eval/TAG")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--work", type=Path, default=None, help="default: runs/flywheel-demo-SIZE")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    try:
        result = evaluate(args.checkpoint, args.tag, args.size, args.work or Path(f"runs/flywheel-demo-{args.size}"),
                          args.settings)
    except FlywheelError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(json.dumps({k: result[k] for k in SHOWN if k in result}, indent=1))


if __name__ == "__main__":
    main()
