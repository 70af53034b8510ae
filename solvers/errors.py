"""The error hierarchy every stage raises.

It lives in ``solvers/`` (the lowest layer) so that every stage, from the IR up to the CLI, can raise it
without importing from a stage downstream of itself. The CLI turns a ``FlywheelError`` into one clear line
and exit code 2; anything else is an internal fault (exit 1).
"""

from __future__ import annotations


class FlywheelError(Exception):
    """A user error: bad input, a missing file, an unknown name.

    ``culprit`` names what is wrong (a file, a field, a sample id) so the one line printed says where to look.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, culprit: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.culprit = culprit

    def __str__(self) -> str:
        return f"{self.culprit}: {self.message}" if self.culprit else self.message


class ConfigError(FlywheelError):
    """A configuration file or option is invalid (unknown key, wrong type, malformed TOML)."""


class UnknownNameError(FlywheelError):
    """A name (family, contract, solver API, backend) is not registered."""


class ModelError(FlywheelError):
    """An optimisation-model IR is malformed (unknown variable, duplicate name, non-finite coefficient)."""


class StoreError(FlywheelError):
    """The sample store cannot be opened, written or queried."""


class SandboxError(FlywheelError):
    """A program could not be given to the sandbox (unreadable file, bad batch line)."""


def nearest(name: str, candidates: list[str] | tuple[str, ...]) -> str | None:
    """The candidate closest to ``name`` (for 'did you mean' hints), or None if nothing is close."""
    import difflib

    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.5)
    return matches[0] if matches else None


def unknown_name(kind: str, name: str, known: list[str] | tuple[str, ...]) -> UnknownNameError:
    """Build the standard 'unknown X' error with the registered names and a nearest-match hint."""
    hint = nearest(name, known)
    did_you_mean = f" (did you mean {hint!r}?)" if hint else ""
    return UnknownNameError(
        f"unknown {kind} {name!r}{did_you_mean}; known: {', '.join(sorted(known))}", culprit=kind
    )
