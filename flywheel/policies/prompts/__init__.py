"""Versioned prompt templates.

Each template is one file ``<name>.v<N>.txt``: optional ``#`` header lines, then ``[system]`` and ``[user]``
sections with ``{{placeholders}}``. A template's id is ``name/vN`` and its hash is the sha256 of the file bytes,
so editing a file without bumping the version still changes every sample's lineage (and misses the cache).
``{{api_hint}}`` is filled from the ``api_<api>`` template of the target solver API; the hash of a rendered
prompt's lineage then covers both files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from solvers.errors import ConfigError, unknown_name
from solvers.records import canonical_json, content_hash

HERE = Path(__file__).parent
_FILE = re.compile(r"^(?P<name>[a-z_]+)\.v(?P<version>\d+)\.txt$")
_VAR = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.M)


@dataclass(frozen=True)
class Template:
    name: str
    version: int
    system: str
    user: str
    hash: str

    @property
    def id(self) -> str:
        return f"{self.name}/v{self.version}"

    @property
    def variables(self) -> set[str]:
        return set(_VAR.findall(self.system)) | set(_VAR.findall(self.user))


@dataclass(frozen=True)
class RenderedPrompt:
    template_id: str
    template_hash: str  # lineage: the template file (and the API hint file it pulled in)
    messages: tuple[dict[str, str], ...]

    @property
    def prompt_hash(self) -> str:
        """Hash of the exact messages sent."""
        return content_hash(canonical_json(list(self.messages)))


def _parse(path: Path) -> Template:
    m = _FILE.match(path.name)
    assert m, path
    raw = path.read_bytes()
    text = raw.decode()
    parts = _SECTION.split(text)
    # parts = [header, "system", body, "user", body] (system optional)
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    if "user" not in sections:
        raise ConfigError("a prompt template needs a [user] section", culprit=str(path))
    return Template(name=m["name"], version=int(m["version"]), system=sections.get("system", "").strip(),
                    user=sections["user"].strip(), hash=content_hash(raw))


@cache
def templates() -> dict[str, Template]:
    """Every template by id, plus each name's latest version under its bare name."""
    found: dict[str, Template] = {}
    for path in sorted(HERE.glob("*.txt")):
        if _FILE.match(path.name):
            t = _parse(path)
            found[t.id] = t
            if t.name not in found or found[t.name].version < t.version:
                found[t.name] = t
    return found


def get_template(name: str) -> Template:
    """``name`` (latest version) or ``name/vN``."""
    known = templates()
    if name not in known:
        raise unknown_name("prompt template", name, sorted(k for k in known if "/" not in k))
    return known[name]


def render(name: str, **values: str) -> RenderedPrompt:
    """Fill a template. ``api`` pulls in the ``api_<api>`` hint for ``{{api_hint}}``; a missing value is an error."""
    t = get_template(name)
    hashes = [t.hash]
    values = dict(values)
    if "api_hint" in t.variables and "api_hint" not in values:
        hint = get_template(f"api_{values.get('api', '')}") if values.get("api") else None
        if hint is None:
            raise ConfigError(f"template {t.id} needs a target solver api", culprit=t.id)
        values["api_hint"] = hint.user
        hashes.append(hint.hash)
    missing = t.variables - values.keys()
    if missing:
        raise ConfigError(f"template {t.id} needs values for {sorted(missing)}", culprit=t.id)

    def fill(text: str) -> str:
        return _VAR.sub(lambda m: str(values[m.group(1)]), text)

    messages = ([{"role": "system", "content": fill(t.system)}] if t.system else []) + [
        {"role": "user", "content": fill(t.user)}]
    lineage = hashes[0] if len(hashes) == 1 else content_hash("+".join(hashes))
    return RenderedPrompt(template_id=t.id, template_hash=lineage, messages=tuple(messages))
