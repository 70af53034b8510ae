"""`flywheel report`: the page renders in headless Chromium and every plot is really there."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flywheel.evaluate.runner import write_results
from flywheel.evaluate.score import ItemVerdict, summarise
from flywheel.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EXPECTED_PLOTS = {"rounds_pass_rate.png", "rounds_taxonomy.png", "training_curves.png", "evaluation_pass1.png"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    store = root / "store"
    proc = subprocess.run([sys.executable, "-m", "flywheel.cli", "run-round", "--store", str(store), "--problems",
                           "4", "--families", "diet,assignment", "--seed", "3"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run = root / "runs" / "tiny"
    run.mkdir(parents=True)
    run.joinpath("metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "loss": 5.0 / s, "mfu": 0.01 * s, "tokens_per_s": 100.0 * s}) + "\n"
        for s in range(1, 6)))
    verdicts = [ItemVerdict(id=str(i), benchmark="nl4opt", labelled=True, answer=1.0, exec_status="ok",
                            passed={"strict": i < 2, "orlm_lenient": i < 3}) for i in range(4)]
    write_results(root / "eval", verdicts, summarise(verdicts), {"policy": "hf:tiny"})
    return {"store": store, "runs": root / "runs", "eval": root / "eval", "out": root / "page"}


def test_report_writes_every_plot_and_table(sources):
    page = build_report(sources["out"], store=sources["store"], runs=[sources["runs"]], evals=[sources["eval"]])
    text = page.read_text()
    assert {p.name for p in sources["out"].glob("*.png")} == EXPECTED_PLOTS
    for name in EXPECTED_PLOTS:
        assert f"src='{name}'" in text
    assert "diet" in text and "nl4opt" in text and "50.0" in text  # strict pass@1 of the eval is 2/4


def test_missing_sources_are_said_not_plotted(tmp_path: Path):
    page = build_report(tmp_path / "page", store=tmp_path / "nope", runs=[tmp_path], evals=[tmp_path])
    text = page.read_text()
    assert "no store at" in text and "no training runs" in text and "no evaluation summaries" in text
    assert not list((tmp_path / "page").glob("*.png"))


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="Debian chromium not installed")
def test_page_renders_in_headless_chromium(sources, tmp_path: Path):
    assert CHROMIUM, "chromium must be installed by `make install` in CI"
    page = build_report(sources["out"], store=sources["store"], runs=[sources["runs"]], evals=[sources["eval"]])
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert 'data-ready="yes"' in dom, proc.stderr[-2000:]
    images = re.findall(r"<img[^>]*>", dom)
    assert len(images) == len(EXPECTED_PLOTS)
    for img in images:  # the page's load handler marks each image decoded with a non-zero width
        assert 'data-loaded="yes"' in img, img
