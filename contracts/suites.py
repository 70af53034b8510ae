"""Suites: ordered sets of contracts with parameters, declared in Python or TOML; user files load by path.

A Python suite file defines contracts with ``@contract`` and optionally ``SUITE = Suite.of(...)``; without
``SUITE`` the file's own contracts form the suite. A TOML suite reads::

    name = "lenient_policy"
    files = ["my_contracts.py"]          # user contract files, relative to this TOML file
    [[contracts]]
    name = "objective_matches"
    params = { rule = "orlm_lenient" }
    severity = "warn"                    # optional override
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from contracts.api import REGISTRY, Contract, Severity, Stage, _register, get_contract, load_builtins
from solvers.config import load_toml
from solvers.errors import ConfigError, FlywheelError, nearest, unknown_name
from solvers.registry import by_name

Entry = str | Contract | tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Suite:
    name: str
    contracts: tuple[Contract, ...]
    description: str = ""

    @classmethod
    def of(cls, name: str, *entries: Entry, description: str = "") -> Suite:
        """Build a suite from contract names, ``(name, params)`` pairs or contract objects, in order."""
        out: list[Contract] = []
        for e in entries:
            if isinstance(e, Contract):
                out.append(e)
            elif isinstance(e, str):
                out.append(get_contract(e))
            else:
                cname, params = e
                out.append(get_contract(cname).with_params(**params))
        names = [c.name for c in out]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"contract {dupes[0]!r} appears twice", culprit=f"suite {name}")
        return cls(name=name, contracts=tuple(out), description=description)

    def names(self) -> list[str]:
        return [c.name for c in self.contracts]


SUITES: dict[str, Callable[[], Suite]] = {}


def register_suite(name: str) -> Callable[[Callable[[], Suite]], Callable[[], Suite]]:
    return by_name(SUITES, name)


def suite_names() -> list[str]:
    load_builtins()
    return sorted(SUITES)


@dataclass(frozen=True)
class UserFile:
    """A user contract file as the parent knows it: the blind process executed it (``contracts.blind``); here are
    only its path, its module name and its ``SUITE`` (resolved against the registry), never its code."""

    path: str
    module: str
    suite: Suite | None = None


def load_contract_file(path: str | Path) -> tuple[UserFile, list[Contract]]:
    """Load a user contract file by path; returns the file and the contracts it defined.

    The file is executed only in the blind process, where no ground truth, store or environment exists; the parent
    registers stand-ins (``UserFn``) carrying each contract's metadata and source. The module name is derived from
    the absolute path, so loading the same file twice replaces its contracts instead of clashing with them.
    """
    from contracts import blind

    load_builtins()
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise FlywheelError("contract file not found", culprit=str(path))
    if p.suffix != ".py":
        raise FlywheelError("not a Python file", culprit=str(path))
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise FlywheelError(f"cannot read: {exc}", culprit=str(path)) from exc
    info = blind.load_file(str(p), text)
    mod_name = blind.module_name(str(p))
    for name in [n for n, c in REGISTRY.items() if c.source == mod_name]:
        del REGISTRY[name]  # re-loading the file replaces its own definitions
    defined = []
    for m in info["contracts"]:
        spec = Contract(name=m["name"], fn=blind.UserFn(str(p), m["name"], m["source_text"]),
                        stage=Stage(m["stage"]), severity=Severity(m["severity"]), cost=float(m["cost"]),
                        params=dict(m["params"]), description=m["description"], source=mod_name,
                        answer_aware=bool(m["answer_aware"]))
        _register(spec)
        defined.append(spec)
    suite = None
    if info["suite"] is not None:
        s = info["suite"]
        suite = Suite(name=s["name"], description=s["description"], contracts=tuple(
            replace(get_contract(n), params=dict(params), severity=Severity(sev)) for n, params, sev in s["entries"]))
    return UserFile(path=str(p), module=mod_name, suite=suite), defined


def load_suite(spec: str, contract_files: tuple[str | Path, ...] | list[str | Path] = ()) -> Suite:
    """Resolve a suite: a built-in suite name, a ``.toml`` suite file, or a ``.py`` contract file.

    ``contract_files`` (and ``+file.py`` parts of ``spec``, as in ``"generator+my_contracts.py"``) are user contract
    files: their contracts run in addition to the suite's, after it in suite order.
    """
    load_builtins()
    base, *extra = spec.split("+")
    files = [*contract_files, *extra]
    added: list[Contract] = []
    for f in files:
        added += load_contract_file(f)[1]
    suite = _resolve(base)
    have = set(suite.names())
    more = [c for c in added if c.name not in have]
    if not more:
        return suite
    return Suite(name=spec if extra else suite.name, contracts=(*suite.contracts, *more), description=suite.description)


def _resolve(spec: str) -> Suite:
    if spec.endswith(".py"):
        user, defined = load_contract_file(spec)
        if user.suite is not None:
            return user.suite
        if not defined:
            raise FlywheelError("defines no contracts and no SUITE", culprit=spec)
        return Suite(name=Path(spec).stem, contracts=tuple(defined))
    if spec.endswith(".toml"):
        return _load_toml(Path(spec))
    if spec not in SUITES:
        raise unknown_name("suite", spec, list(SUITES))
    return SUITES[spec]()


_TOP_KEYS = ("name", "description", "files", "contracts")
_ENTRY_KEYS = ("name", "params", "severity")


def _load_toml(path: Path) -> Suite:
    if not path.is_file():
        raise FlywheelError("suite file not found", culprit=str(path))
    data = load_toml(path)
    _check_keys(data, _TOP_KEYS, str(path))
    for f in data.get("files", []):
        load_contract_file(path.parent / f)
    entries: list[Contract] = []
    for i, e in enumerate(data.get("contracts", [])):
        where = f"{path} contracts[{i}]"
        _check_keys(e, _ENTRY_KEYS, where)
        if "name" not in e:
            raise ConfigError("missing key 'name'", culprit=where)
        c = get_contract(e["name"]).with_params(**e.get("params", {}))
        if "severity" in e:
            sev = Severity(e["severity"]) if e["severity"] in Severity.__members__.values() else None
            if sev is None or (sev == Severity.REPAIR) != (c.severity == Severity.REPAIR):
                raise ConfigError(f"severity {e['severity']!r} not allowed for {c.name}", culprit=where)
            c = replace(c, severity=sev)
        entries.append(c)
    return Suite.of(data.get("name", path.stem), *entries, description=data.get("description", ""))


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            hint = nearest(key, allowed)
            raise ConfigError(f"unknown key {key!r}" + (f" (did you mean {hint!r}?)" if hint else ""), culprit=where)
