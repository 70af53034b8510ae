"""Model cards: every checkpoint directory gets a ``README.md`` in Hugging Face's card format (YAML front matter,
then a Markdown body) that says where it came from.

The front matter is the record: ``library_name``, ``pipeline_tag``, ``tags`` (what the hub reads) and a
``flywheel`` mapping with the lineage: the base checkpoint (its path and, for an import, its provenance; for a
fine-tune of a fine-tune, the base's own lineage one level deep), the data shards with their manifests, the recipe,
the training metrics, and ``eval``: the results ``flywheel eval`` recorded on this checkpoint, one entry per
(benchmark, policy settings), replaced when the same evaluation runs again. The body is rendered from the front
matter every time, so the two never disagree. Written with ``huggingface_hub.ModelCard`` (a dependency of
transformers), read back with ``ModelCard.load``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CARD = "README.md"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _body(meta: dict[str, Any], title: str) -> str:
    fw = meta.get("flywheel", {})
    lines = [f"# {title}", "", "Written by or-flywheel. The YAML front matter above is the machine-readable record.",
             ""]
    base = fw.get("base") or {}
    lines += ["## Lineage", ""]
    if base:
        src = base.get("source") or base.get("path", "")
        lines.append(f"- base checkpoint: `{base.get('path', src)}`")
        if base.get("source_sha256"):
            lines.append(f"- imported from: `{src}` ({base.get('source_kind')}, sha256 "
                         f"`{base['source_sha256'][:16]}…`), quantisation "
                         f"{(base.get('quantisation') or {}).get('file_type', 'none')}, dequantised to "
                         f"{base.get('dequantised_dtype')}")
        if base.get("recipe"):
            lines.append(f"- the base was itself trained with recipe `{base['recipe'].get('name')}`")
    else:
        lines.append("- base checkpoint: none (random initialisation)")
    for shard in fw.get("data", []):
        manifest = shard.get("manifest") or {}
        keys = ", ".join(f"{k}={_fmt(v)}" for k, v in manifest.items() if not isinstance(v, dict | list))
        lines.append(f"- data shard `{shard['path']}`" + (f": {keys}" if keys else ""))
    recipe = fw.get("recipe")
    if recipe:
        lines += ["", "## Recipe", ""]
        for key in ("name", "kind", "init", "lora", "steps", "lr", "batch_rows", "seq_len", "dtype"):
            if key in recipe:
                lines.append(f"- {key}: {_fmt(recipe[key])}")
    metrics = fw.get("metrics")
    if metrics:
        lines += ["", "## Training metrics", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in metrics.items() if not isinstance(v, dict | list)]
    evals = fw.get("eval") or []
    lines += ["", "## Evaluation", ""]
    if evals:
        lines += ["| benchmark | items | pass@1 strict | pass@1 lenient | settings | date |", "|---|---|---|---|---|---|"]
        for e in evals:
            lines.append(f"| {e.get('benchmark')} | {e.get('items')} | {_fmt(e.get('pass_at_1_strict'))} | "
                         f"{_fmt(e.get('pass_at_1_lenient'))} | {e.get('settings', '')} | {e.get('date', '')} |")
    else:
        lines.append("Not evaluated yet (`flywheel eval run --policy hf:THIS_DIR` adds results here).")
    return "\n".join(lines) + "\n"


def read_card(path: str | Path) -> dict[str, Any]:
    """The card's front matter as a dict ({} when the directory has no card)."""
    from huggingface_hub import ModelCard

    f = Path(path) / CARD
    if not f.is_file():
        return {}
    return ModelCard.load(f).data.to_dict()


def _save(path: Path, meta: dict[str, Any], title: str) -> Path:
    from huggingface_hub import ModelCard, ModelCardData

    data = ModelCardData(**meta)
    card = ModelCard(f"---\n{data.to_yaml()}\n---\n\n{_body(data.to_dict(), title)}")
    card.save(path / CARD)
    return path / CARD


def write_card(path: str | Path, *, base: dict[str, Any] | None = None, data: list[dict[str, Any]] | None = None,
               recipe: dict[str, Any] | None = None, metrics: dict[str, Any] | None = None,
               title: str | None = None) -> Path:
    """Write ``path/README.md``; evaluation results already on an earlier card of this directory are kept."""
    path = Path(path)
    previous = read_card(path).get("flywheel", {})
    fw: dict[str, Any] = {"base": base or {}, "data": data or [], "recipe": recipe or {}, "metrics": metrics or {},
                          "eval": previous.get("eval", [])}
    meta = {"library_name": "transformers", "pipeline_tag": "text-generation",
            "tags": ["or-flywheel", "operations-research"] + (["lora"] if (recipe or {}).get("lora") else []),
            "flywheel": fw}
    return _save(path, meta, title or path.name)


def base_lineage(path: str | Path) -> dict[str, Any]:
    """What a card says about a base checkpoint: its path, its provenance if imported, its recipe if trained."""
    from training.pretrained import read_provenance

    p = Path(path)
    out: dict[str, Any] = {"path": str(p.resolve())}
    prov = read_provenance(p)
    if prov:
        out.update(prov)
    fw = read_card(p).get("flywheel", {})
    if fw.get("recipe"):
        out["recipe"] = fw["recipe"]
    if fw.get("base") and not prov:
        out["base"] = {k: v for k, v in fw["base"].items() if k != "base"}
    return out


def record_eval(path: str | Path, result: dict[str, Any]) -> Path | None:
    """Add or replace (same benchmark and settings) one evaluation result on the card of checkpoint ``path``.

    Returns the card path, or None when ``path`` is not a checkpoint directory (no config.json).
    """
    from training.pretrained import read_provenance

    p = Path(path)
    if not (p / "config.json").is_file():
        return None
    meta = read_card(p)
    if not meta:
        write_card(p, base=read_provenance(p) or {})
        meta = read_card(p)
    fw = meta.setdefault("flywheel", {})
    key = (result.get("benchmark"), result.get("settings"))
    fw["eval"] = [e for e in fw.get("eval", []) if (e.get("benchmark"), e.get("settings")) != key] + [result]
    return _save(p, meta, p.name)
