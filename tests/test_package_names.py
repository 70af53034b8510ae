"""The project's top-level ``kernels`` package and Hugging Face's ``kernels`` distribution share an import name.

transformers >= 5.25 depends on that distribution and imports it whenever it is installed; then, run from the repo
root, transformers imported this project's ``kernels`` as its own and failed (``ImportError: CUDAProperties``), and
run from anywhere else this project's ``kernels`` was shadowed. pyproject.toml pins ``transformers<5.25`` and the
Makefile removes the distribution from an existing venv; these tests fail when either comes back.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

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
