"""Kernel candidates are screened in the project's sandbox (``flywheel.kernel_candidates.sandbox_runner``) and only
the tuner's own measurements reach the table (``kernels.tuner.tune_op``).

Each test runs a real candidate file through the real sandbox (bubblewrap / seccomp / scrubbed environment where the
machine has them; ``Execution.isolation`` names what was in force) and the real tuner, on a 64x32 SwiGLU (fp32):

* a candidate that opens a connection to a real HTTP server on 127.0.0.1 is refused (no request reaches the server);
* a candidate that reads an environment secret finds none (the sandbox's environment is scrubbed);
* a candidate that lies in the screen (a fake result line on stdout, and the harness's verifier and timer replaced
  from inside) about its numerics is rejected by the tuner's own check, and one that lies about its speed loses
  to ``reference`` in the tuner's own race; neither reaches a table;
* an honest correct candidate passes, is raced and confirmed.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from flywheel.kernel_candidates import sandbox_runner
from kernels.candidate import screen
from kernels.tuner import tune_op

HONEST = '''OP = "swiglu"
import torch


def candidate(gate, up):
    return torch.nn.functional.silu(gate) * up
'''
NETWORK = '''OP = "swiglu"
import socket
import torch

socket.create_connection(("127.0.0.1", {port}), timeout=5).sendall(b"GET /stolen HTTP/1.0\\r\\n\\r\\n")


def candidate(gate, up):
    return torch.nn.functional.silu(gate) * up
'''
SECRET = '''OP = "swiglu"
import os
import torch

raise RuntimeError("env secret: " + os.environ.get("KERNELS_TEST_SECRET", "absent")
                   + "; HOME=" + os.environ.get("HOME", ""))


def candidate(gate, up):
    return torch.nn.functional.silu(gate) * up
'''
# Lies from inside the screen: prints the old protocol's result line, and, when it finds itself in the harness's
# working directory (inputs.b64 beside it), makes the harness's error measure read 0 and its timer read 1 ns for
# this candidate, so the screen claims a correct kernel ~1e5x faster than the reference.
LIAR = '''OP = "swiglu"
import json
import os
import time
import torch

print(json.dumps({{"ok": True, "ms": 1e-6, "max_error": 0.0, "detail": ""}}))
if os.path.isfile("inputs.b64"):
    import kernels.tuner as _t
    import kernels.verify as _v
    _v._error = lambda *a, **k: 0.0
    _run_once = _t._run_once
    _t._run_once = lambda fn, *a, **k: 1e-9 if fn is candidate else _run_once(fn, *a, **k)


def candidate(gate, up):
    {body}
'''
WRONG_BODY = "return torch.sigmoid(gate) * up  # drops the gate factor"
SLOW_BODY = "time.sleep(0.03)\n    return torch.nn.functional.silu(gate) * up"


def _args() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(64, 32, generator=g).requires_grad_(True),
            torch.randn(64, 32, generator=g).requires_grad_(True))


@pytest.fixture(scope="module")
def runner():  # noqa: ANN201 - one warm torch-flavoured worker for the module
    return sandbox_runner()


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    _Recorder.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], _Recorder.hits
    finally:
        httpd.shutdown()
        httpd.server_close()


def _write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    return str(path)


def test_network_is_refused(tmp_path: Path, runner, server) -> None:  # noqa: ANN001
    port, hits = server
    # The server is reachable from here (the test's own process): the refusal below is the sandbox's doing.
    import urllib.request

    urllib.request.urlopen(f"http://127.0.0.1:{port}/probe", timeout=5).close()
    assert hits == ["/probe"]
    sc = screen(_write(tmp_path, "net", NETWORK.format(port=port)), "swiglu", _args(), {}, "float32", 2, runner)
    assert not sc.ok and sc.detail.startswith("sandbox: ")
    assert hits == ["/probe"]  # nothing arrived from the candidate
    assert "netns" in sc.isolation or "seccomp" in sc.isolation


def test_environment_secrets_are_not_inherited(tmp_path: Path, runner, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("KERNELS_TEST_SECRET", "hunter2-do-not-leak")
    sc = screen(_write(tmp_path, "env", SECRET), "swiglu", _args(), {}, "float32", 2, runner)
    assert not sc.ok
    assert "env secret: absent" in sc.detail  # the candidate ran and found no secret
    assert "hunter2" not in sc.detail


def _others() -> set[str]:
    """Every registered swiglu backend but reference: files other tests registered in this process (an LLM-written
    ``file:swiglu-0``, say) stay registered and could win the race these tests read."""
    from kernels.registry import backends

    return {b.name for b in backends("swiglu")} - {"reference"}


def test_lies_about_numerics_are_caught_by_the_tuner(tmp_path: Path, runner) -> None:  # noqa: ANN001
    path = _write(tmp_path, "liar_wrong", LIAR.format(body=WRONG_BODY))
    sc = screen(path, "swiglu", _args(), {}, "float32", 2, runner)
    assert sc.ok and sc.claimed_ms < 1e-3  # the screen was fooled: what it says is only a claim
    res = tune_op("swiglu", "D=32", "float32", "cpu", _args(), {}, 2, 0.0, skip=_others(),
                  files=[path], runner=runner)
    c = {x.backend: x for x in res.candidates}["file:liar_wrong"]
    assert not c.ok and "wrong in the tuner's own check" in c.detail and "relative error" in c.detail
    assert res.winner == "reference"


def test_lies_about_speed_lose_the_tuners_race(tmp_path: Path, runner) -> None:  # noqa: ANN001
    path = _write(tmp_path, "liar_slow", LIAR.format(body=SLOW_BODY))
    res = tune_op("swiglu", "D=32", "float32", "cpu", _args(), {}, 2, 0.0, skip=_others(),
                  files=[path], runner=runner)
    c = {x.backend: x for x in res.candidates}["file:liar_slow"]
    assert c.ok and c.ms >= 30.0  # measured here: the 30 ms sleep, whatever the screen claimed
    assert "screen claimed 1e-06 ms" in c.detail
    assert res.winner == "reference"


def test_honest_candidate_is_raced_and_confirmed(tmp_path: Path, runner) -> None:  # noqa: ANN001
    path = _write(tmp_path, "honest", HONEST)
    res = tune_op("swiglu", "D=32", "float32", "cpu", _args(), {}, 2, 0.0, skip=_others(),
                  files=[path], runner=runner)
    c = {x.backend: x for x in res.candidates}["file:honest"]
    assert c.ok and c.ms > 0 and "screen claimed" in c.detail
    if res.winner == "file:honest":  # won the race: then it was confirmed on fresh inputs
        assert c.detail.endswith("confirmed")


def test_candidate_files_without_a_runner_are_refused(tmp_path: Path) -> None:
    from solvers.errors import ConfigError

    with pytest.raises(ConfigError, match="sandbox runner"):
        tune_op("swiglu", "D=32", "float32", "cpu", _args(), {}, 2, 0.0, skip={"compiled"},
                files=[_write(tmp_path, "honest", HONEST)], runner=None)
