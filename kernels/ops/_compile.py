"""torch.compile wrappers shared by the ``compiled`` backends: compiled lazily on first call, once per function.

``dynamic=None`` lets Dynamo specialise on the first shape and switch to dynamic shapes on the first recompile, so
a training run with a few row lengths compiles at most twice per op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

_compiled: dict[Callable[..., Any], Callable[..., Any]] = {}


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    if fn not in _compiled:
        _compiled[fn] = torch.compile(fn, dynamic=None, fullgraph=True)
    return _compiled[fn]
