"""LLM-written kernel candidates: ``flywheel kernels tune --llm SPEC`` asks a real OpenAI-compatible HTTP server on
127.0.0.1 (the project's scripted server, standing in for a model) for candidates of the profiled ops. A correct
reply becomes a file that is verified and raced in a child process; a numerically wrong one is rejected for
numerics; prose, code without ``OP`` / ``candidate`` and a failed request are rejected with a reason, never a crash."""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from support.scripted_server import ScriptedServer
from typer.testing import CliRunner

from flywheel.config import PolicySection
from flywheel.kernel_candidates import LLMWriter
from flywheel.policies.run import sample_seed
from kernels import registry

GOOD = '''Fusing the gate into one expression:

```python
import torch

OP = "swiglu"


def candidate(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(gate) * up
```
'''
WRONG = '''```python
import torch

OP = "swiglu"


def candidate(gate, up):
    return torch.sigmoid(gate) * up  # drops the gate factor of silu
```
'''
PROSE = "SwiGLU is already memory-bound on CPU; I would not change the reference implementation."
NO_OP = '''```python
import torch


def candidate(gate, up):
    return torch.nn.functional.silu(gate) * up
```
'''
REPLIES = [GOOD, WRONG, PROSE, NO_OP]  # sample index n of swiglu gets REPLIES[n]


class _Replies:
    """The server's reply per request seed (sample n of op swiglu -> REPLIES[n]); keeps every request body."""

    def __init__(self) -> None:
        self.by_seed = {sample_seed("kernels/swiglu", n): r for n, r in enumerate(REPLIES)}
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.bodies.append(body)
        return self.by_seed.get(int(body["seed"]), PROSE)


def test_writer_files_provenance_rejections_and_cache(tmp_path: Path) -> None:
    replies = _Replies()
    settings = PolicySection(max_retries=0)
    with ScriptedServer(reply=replies, script={sample_seed("kernels/swiglu", 4): ["401!"]}) as server:
        spec = f"openai:kernel-writer@{server.url}"
        writer = LLMWriter(spec, tmp_path / "cands", k=5, settings=settings)
        written = writer(["swiglu"])
        again = writer(["swiglu"])
    assert [Path(f).name for f in written.files] == ["swiglu-0.py", "swiglu-1.py"]
    good = Path(written.files[0]).read_text()
    assert f"# policy: {spec}" in good and "# model: kernel-writer" in good and "# prompt_sha256: " in good
    assert good.rstrip().endswith("return torch.nn.functional.silu(gate) * up")
    reasons = {r.name: r.reason for r in written.rejected}
    assert reasons["llm:swiglu-2"] == "reply holds no code"
    assert reasons["llm:swiglu-3"].startswith("code defines no OP")
    assert reasons["llm:swiglu-4"].startswith("no reply (http_error")  # the scripted 401
    assert (tmp_path / "cands" / "swiglu-2.reply.md").read_text() == PROSE  # the raw reply is kept for review
    ref_src = inspect.getsource(registry.get("swiglu").fn)
    assert len(replies.bodies) == 6  # 5 first time; only the failed request is asked again
    assert all(ref_src in b["messages"][0]["content"] for b in replies.bodies)
    assert again.requests_sent == 1 and again.cache_hits == 4 and again.files == written.files


@pytest.mark.slow
def test_cli_tune_races_llm_candidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flywheel.cli import app

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the candidate child processes: small shapes, one thread
    replies = _Replies()
    out = tmp_path / "t.json"
    with ScriptedServer(reply=replies) as server:
        res = CliRunner().invoke(app, [
            "kernels", "tune", "--model", "llama_tiny", "--dtype", "fp32", "--rows", "2", "--seq", "16", "--vocab",
            "128", "--repeats", "2", "--op", "swiglu", "--skip-backend", "compiled", "--out", str(out),
            "--llm", f"openai:kernel-writer@{server.url}", "--llm-candidates", "3", "--format", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    rows = {r["backend"]: r for r in report["candidates"]}
    assert rows["file:swiglu-0"]["ok"] and rows["file:swiglu-0"]["ms"] > 0  # verified, then raced
    assert not rows["file:swiglu-1"]["ok"] and "relative error" in rows["file:swiglu-1"]["detail"]
    assert not rows["llm:swiglu-2"]["ok"] and rows["llm:swiglu-2"]["detail"] == "reply holds no code"
    assert report["llm"]["requests_sent"] == 3
    assert all(inspect.getsource(registry.get("swiglu").fn) in b["messages"][0]["content"] for b in replies.bodies)
    table = json.loads(out.read_text())
    assert table["meta"]["llm"]["files"] == [str((tmp_path / "t.json.candidates" / f).resolve())
                                             for f in ("swiglu-0.py", "swiglu-1.py")]
    winner = table["entries"][0]["backend"]
    assert winner in {r["backend"] for r in report["candidates"] if r["ok"]}
