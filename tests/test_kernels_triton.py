"""Triton kernels (written for CUDA) run on CPU under TRITON_INTERPRET=1, fp32 only (bf16 is unreliable in the
interpreter), forward and backward against ``reference`` with the fp32 tolerance of ``kernels.verify`` (1e-4
relative: the kernels only reorder the row reductions).

``triton`` is a test dependency (the ``test`` extra, installed by ``make test``), so this runs in CI, never skips.
The checks run in a child process with TRITON_INTERPRET=1 in its environment from the start: triton reads the flag
when ``triton.language`` is first imported, and in the pytest process torch may already have imported it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import triton  # noqa: F401  (installed by `make test`: a missing triton fails here, it is never skipped)

CHILD = r"""
import json, torch
from kernels.verify import compare, variants

def leaf(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_(True)

ang = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(9))
cases = [
    ("rms_norm", (leaf(3, 4, 48), leaf(48, seed=1), 1e-6)),
    ("rms_norm", (leaf(6, 16), leaf(16, seed=1), 1e-5)),
    ("swiglu", (leaf(7, 300), leaf(7, 300, seed=1))),
    ("rope", (leaf(2, 4, 5, 16), leaf(2, 2, 5, 16, seed=1), torch.cat([ang.cos()] * 2, -1),
              torch.cat([ang.sin()] * 2, -1))),
]
out = []
for i, (op, args) in enumerate(cases):
    for name, inputs in variants(op, args):
        c = compare(op, "triton", inputs, {}, "float32")
        out.append({"case": f"{op}-{i}-{name}", "ok": c.ok, "err": c.max_error, "detail": c.detail})
print(json.dumps(out))
"""


def test_triton_kernels_match_reference_fp32_in_interpreter() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 16  # 4 cases x (captured, random, large, zeros)
    bad = [r for r in results if not r["ok"]]
    assert not bad, bad
