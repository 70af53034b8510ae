"""Op x backend benchmarks: time (forward + backward) and peak memory, each relative to ``reference``.

Inputs are canonical per op (``CASES``), sized by a ``scale`` so the CLI default stays quick on a laptop CPU.
Peak memory is measured in a child process per (op, backend): the child builds the inputs, records its peak RSS
(``ru_maxrss``, Linux KiB), runs forward + backward once, and reports the growth of the peak. A fresh process per
variant means one backend's freed buffers can never hide another's peak; no tracemalloc (it does not see torch's
allocator).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from kernels import registry
from kernels.verify import _autocast, clone_args, run


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _leaf(*shape: int, g: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=g) * scale).requires_grad_(True)


def _rms(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    return (_leaf(4 * s, 1024, g=g), _leaf(1024, g=g), 1e-6), {}


def _swiglu(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    return (_leaf(4 * s, 1024, g=g), _leaf(4 * s, 1024, g=g)), {}


def _rope(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    ang = torch.randn(2, s, 32, generator=g)
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    return (_leaf(2, 8, s, 64, g=g), _leaf(2, 4, s, 64, g=g), cos, sin), {}


def flce_case(tokens: int, dim: int, vocab: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    labels = torch.randint(0, vocab, (tokens,), generator=g)
    labels[::17] = -100
    return (_leaf(tokens, dim, g=g), _leaf(vocab, dim, g=g, scale=0.02), labels, -100, "sum"), {}


def _flce(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return flce_case(2 * s, 128, 8192)


def moe_case(tokens: int, dim: int, ffn: int, experts: int, k: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    logits = torch.randn(tokens, experts, generator=g)
    w, idx = torch.topk(logits.softmax(-1), k)
    w = (w / w.sum(-1, keepdim=True)).requires_grad_(True)
    return (_leaf(tokens, dim, g=g), idx, w, _leaf(experts, 2 * ffn, dim, g=g, scale=0.05),
            _leaf(experts, dim, ffn, g=g, scale=0.05)), {}


def _moe(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return moe_case(2 * s, 128, 128, 8, 2)


def _router(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    return (_leaf(4 * s, 64, g=g), 6, "sigmoid"), {"bias": torch.randn(64, generator=g) * 0.01, "n_group": 8,
                                                  "topk_group": 4, "scaling": 2.5}


def _attn(s: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    g = _g()
    return (_leaf(2, 8, s, 64, g=g), _leaf(2, 4, s, 64, g=g), _leaf(2, 4, s, 64, g=g), None, 0.125), {}


CASES: dict[str, Callable[[int], tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "rms_norm": _rms, "swiglu": _swiglu, "rope": _rope, "fused_linear_cross_entropy": _flce,
    "moe_dispatch": _moe, "moe_router": _router, "attention": _attn,
}


def time_ms(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str,
            repeats: int) -> float:
    times = []
    for i in range(repeats + 1):
        a = clone_args(args)
        t0 = time.perf_counter()
        run(fn, a, kwargs, dtype, "cpu")
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _child(op: str, backend: str, dtype: str, case: str) -> None:
    args, kwargs = _case(op, case)
    fn = registry.get(op, backend).fn
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with _autocast(dtype, "cpu"):
        out = fn(*args, **kwargs)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor) and o.requires_grad]
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    if outs and leaves:
        torch.autograd.grad([o.float().sum() for o in outs], leaves, allow_unused=True)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_mb": (after - before) / 1024}))


def _case(op: str, case: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    kind, _, rest = case.partition(":")
    nums = [int(x) for x in rest.split(",")] if rest else []
    if kind == "flce":
        return flce_case(*nums)
    if kind == "moe":
        return moe_case(*nums)
    return CASES[op](nums[0] if nums else 512)


def peak_mb(op: str, backend: str, dtype: str, case: str) -> float:
    """Peak RSS growth (MB) of one forward + backward, measured in a fresh child process."""
    proc = subprocess.run([sys.executable, "-m", "kernels.benchmark", op, backend, dtype, case],
                          capture_output=True, text=True, check=True)
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["peak_mb"])


def bench(ops: list[str], dtype: str, scale: int, repeats: int, memory: bool,
          progress: Callable[[str], None] = lambda s: None) -> list[dict[str, Any]]:
    rows = []
    for op in ops:
        args, kwargs = CASES[op](scale)
        ref_ms = ref_mb = None
        for b in registry.backends(op, "cpu"):
            progress(f"{op} / {b.name}")
            try:
                ms = time_ms(b.fn, args, kwargs, dtype, repeats)
            except Exception as e:  # noqa: BLE001 - a backend that cannot run this case is reported, not fatal
                rows.append({"op": op, "backend": b.name, "error": f"{type(e).__name__}: {e}"})
                continue
            mb = peak_mb(op, b.name, dtype, str(scale)) if memory else None
            if b.name == "reference":
                ref_ms, ref_mb = ms, mb
            rows.append({"op": op, "backend": b.name, "ms": ms, "time_vs_ref": ms / ref_ms if ref_ms else None,
                         "peak_mb": mb, "memory_vs_ref": (mb / ref_mb) if (mb is not None and ref_mb) else None})
    return rows


if __name__ == "__main__":
    _child(*sys.argv[1:5])
