"""The launcher: run a recipe in this process, or start N ranks through torchrun and wait for them.

``launch`` resolves the recipe once, writes it to ``<out>/launch_recipe.json`` and, for N > 1, runs
``python -m torch.distributed.run --standalone --nproc_per_node N -m training.launch <that file> ...``; each rank
re-reads the resolved recipe (so every rank trains exactly the same configuration) and calls ``execute``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from solvers.errors import FlywheelError
from training.config import RecipeConfig


def execute(recipe: RecipeConfig, out: Path, device: str, resume: str | None, progress: Any = None) -> dict[str, Any]:
    """Run one recipe in this process (one rank when under torchrun); returns its summary."""
    if recipe.kind == "progressive":
        from training.progressive import run_progressive

        return run_progressive(recipe, out, device, resume, progress)
    from training.trainer import run

    return run(recipe, out, device, resume, progress)


def launch(recipe: RecipeConfig, out: Path, device: str = "cpu", nproc: int = 1, resume: str | None = None,
           progress: Any = None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    if nproc <= 1:
        return execute(recipe, out, device, resume, progress)
    spec = out / "launch_recipe.json"
    spec.write_text(json.dumps(recipe.model_dump(mode="json"), indent=2))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "-m", "training.launch", str(spec), str(out), device, resume or ""]
    # faulthandler: a rank killed by a signal (a C++ abort in a collective, a segfault) prints every thread's Python
    # stack, so torchrun's report says where it was
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONFAULTHANDLER": "1"}
    summary_path = out / "summary.json"
    summary_path.unlink(missing_ok=True)  # a resumed run reuses its folder: never report the previous run's summary
    proc = subprocess.run(cmd, env=env, cwd=Path(__file__).resolve().parents[1])
    if proc.returncode != 0:
        raise FlywheelError(f"torchrun exited with {proc.returncode}", culprit=" ".join(cmd[:6]))
    return json.loads(summary_path.read_text()) if summary_path.is_file() else {}


def _rank_main(argv: list[str]) -> None:
    spec, out, device, resume = argv[0], Path(argv[1]), argv[2], (argv[3] if len(argv) > 3 and argv[3] else None)
    recipe = RecipeConfig.model_validate(json.loads(Path(spec).read_text()))
    summary = execute(recipe, out, device, resume)
    if int(os.environ.get("RANK", "0")) == 0:
        (out / "summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    _rank_main(sys.argv[1:])
    # The rank's work is done and its summary written: leave without interpreter finalisation, where a C++ static
    # destructor (gloo/c10d threads) aborted a rank now and then ("terminate called without an active exception",
    # faulthandler showing no Python frame), failing a finished run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
