"""Reading a TOML file and validating it with pydantic, for every layer's settings (the flywheel's config, training
recipes, contract suites, mixtures, benchmark cards): a malformed file or an unknown key is a ``ConfigError`` that
names the file, the dotted key and the nearest valid key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solvers.errors import ConfigError, nearest

M = TypeVar("M", bound=BaseModel)


def load_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        return tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError("file not found", culprit=str(p)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML: {exc}", culprit=str(p)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", culprit=str(p)) from None


def validate(model: type[M], data: dict[str, Any], source: str) -> M:
    """Validate ``data`` against ``model``; the error names the file, the dotted key and the nearest valid key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key = ".".join(loc)
        if err["type"] == "extra_forbidden":
            valid = _fields_at(model, loc[:-1])
            hint = nearest(loc[-1], valid)
            did = f"; did you mean {'.'.join([*loc[:-1], hint])!r}?" if hint else ""
            raise ConfigError(f"unknown key {key!r}{did} (valid: {', '.join(valid)})", culprit=source) from None
        raise ConfigError(f"{key}: {err['msg']}", culprit=source) from None


def _fields_at(model: type[BaseModel], path: list[str]) -> list[str]:
    current: Any = model
    for part in path:
        field = current.model_fields.get(part)
        if field is None or not isinstance(field.annotation, type) or not issubclass(field.annotation, BaseModel):
            return []
        current = field.annotation
    return list(current.model_fields)
