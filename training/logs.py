"""Per-step metrics (``metrics.jsonl``) and the curves PNG of a run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsLog:
    """Appends one JSON object per line; on resume, drops lines past the resumed step so the file stays one curve."""

    def __init__(self, path: Path, resume_step: int | None = None) -> None:
        self.path = path
        if resume_step is not None and path.is_file():
            kept = [line for line in path.read_text().splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step]
            path.write_text("".join(f"{line}\n" for line in kept))
        elif resume_step is None and path.exists():
            path.unlink()

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def plot_curves(metrics_path: Path, out_png: Path, title: str = "") -> None:
    """Train loss and val loss per source, tokens/s, MFU: four panels against step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(metrics_path)
    train = [r for r in rows if "loss" in r]
    evals = [r for r in rows if any(k.startswith("val_loss") for k in r)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    axes[0].plot([r["step"] for r in train], [r["loss"] for r in train], label="train")
    for key in sorted({k for r in evals for k in r if k.startswith("val_loss")}):
        pts = [(r["step"], r[key]) for r in evals if key in r]
        axes[0].plot(*zip(*pts, strict=True), marker="o", label=key)
    axes[0].set(xlabel="step", ylabel="loss", title="loss")
    axes[0].legend(fontsize=7)
    axes[1].plot([r["step"] for r in train], [r.get("tokens_per_s", 0) for r in train])
    axes[1].set(xlabel="step", ylabel="tokens/s", title="throughput")
    axes[2].plot([r["step"] for r in train], [100 * r.get("mfu", 0) for r in train])
    axes[2].set(xlabel="step", ylabel="MFU %", title="MFU")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=90)
    plt.close(fig)


class TensorBoardLog:
    """Every numeric field of a metrics record as a TensorBoard scalar (``val_loss/sft``, ``loss``, ``mfu``, ...),
    through torch's ``SummaryWriter``; a no-op when tensorboard is not installed. On resume, events past the resumed
    step are purged so the curves stay one run."""

    def __init__(self, logdir: Path, resume_step: int = 0) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard is a dependency, but a trimmed install must still train
            self.writer = None
            return
        self.writer = SummaryWriter(str(logdir), purge_step=resume_step + 1 if resume_step else None)

    def write(self, record: dict[str, Any]) -> None:
        if self.writer is None:
            return
        step = int(record["step"])
        for key, value in record.items():
            if key != "step" and isinstance(value, int | float) and not isinstance(value, bool):
                self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
