"""Every benchmark result records the SIMD flags that decide its dtypes (bench/_machine.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import cpu_flags, machine  # noqa: E402


def test_cpu_flags_keep_the_simd_flags_of_x86_and_arm(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor : 0\nflags : fpu vme avx2 fma avx512_bf16 amx_tile sse4_2 lm nx\n")
    assert cpu_flags(x86) == ["amx_tile", "avx2", "avx512_bf16", "fma", "sse4_2"]
    arm = tmp_path / "arm"
    arm.write_text("processor : 0\nFeatures : fp asimd evtstrm bf16 i8mm sve\n")
    assert cpu_flags(arm) == ["asimd", "bf16", "i8mm", "sve"]
    assert cpu_flags(tmp_path / "missing") == []


def test_machine_records_this_hosts_flags() -> None:
    info = machine()
    assert info["cpu_flags"] == cpu_flags()
    if Path("/proc/cpuinfo").exists() and " avx2 " in Path("/proc/cpuinfo").read_text():
        assert "avx2" in info["cpu_flags"]


def test_speedrun_seeds_summary_spreads_over_seeds() -> None:
    from bench.speedrun_seeds import markdown, summarize

    def result(strict: float, train_s: float) -> dict:
        r0 = {"round": 0, "pass@1_strict": strict, "pass@1_lenient": strict + 0.05, "items": 60, "train_s": train_s,
              "train_rows": 574, "per_family": {"diet": {"pass@1_strict": strict}}, "miss_classes": {}}
        return {"rounds": [{"round": "base"}, r0], "settings": {"sft_steps": 120, "lr_sft": 3e-4, "heldout_in_training_store": 0}}

    frozen = result(0.9, 1000.0)
    frozen["settings"] |= {"freeze_layers": 10, "freeze_embeddings": True, "sft_budget_s": 1140.0,
                           "sft_min_steps": 90, "lora_r": 64, "lora_alpha": 128.0}
    frozen["rounds"][1]["steps"] = 97  # a time budget cut this seed's run short of its 120 steps
    s = summarize({2: frozen, 0: result(0.8, 1200.0)})
    assert (s["per_seed"][2]["steps"], s["per_seed"][2]["sft_budget_s"]) == (97, 1140.0)
    assert (s["per_seed"][0]["steps"], s["per_seed"][0]["sft_budget_s"]) == (120, 0.0)  # no record: the recipe's
    assert (s["per_seed"][2]["sft_min_steps"], s["per_seed"][0]["sft_min_steps"]) == (90, 0)  # the budget's floor
    assert list(s["per_seed"]) == [0, 2]
    assert s["per_seed"][2]["freeze"] == [10, True] and s["per_seed"][0]["freeze"] == [0, False]
    assert s["per_seed"][2]["lora"] == [64, 128.0] and s["per_seed"][0]["lora"] == [0, 0.0]  # 0: full fine-tuning
    assert s["per_seed"][0]["lr_sft"] == 3e-4  # each seed's row says which learning rate trained it
    assert s["strict"]["mean"] == pytest.approx(0.85) and s["strict"]["std"] == pytest.approx(0.0707, abs=1e-4)
    assert (s["strict"]["min"], s["strict"]["max"], s["train_s"]["mean"]) == (0.8, 0.9, 1100.0)
    md = markdown(s)
    assert "85.0% +- 7.1" in md and max(len(line) for line in md.splitlines()) <= 80
    assert "| 2 | 97 | 1000 |" in md and "| 0 | 120 | 1200 |" in md


def test_train_settings_arms_parse_typed_overrides() -> None:
    from bench.train_settings import ARMS, parse_arm

    assert parse_arm("both=train.compile=true,data.length_groups=32") == (
        "both", {"train.compile": True, "data.length_groups": 32})
    assert parse_arm("x=train.dtype=bf16") == ("x", {"train.dtype": "bf16"})  # not JSON: kept as a string
    assert parse_arm("plain=") == ("plain", {})
    # the default arms are valid recipe overrides, the first being the plain trainer
    from training.config import load_recipe

    for spec in ARMS:
        name, over = parse_arm(spec)
        load_recipe("sft", over)
    assert parse_arm(ARMS[0])[1] == {"train.compile": False, "data.length_groups": 0}
