"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted behaviour: canned replies after a fixed delay,
and injected faults (429 with Retry-After, 5xx, malformed JSON, truncated bodies, replies slower than any timeout).

Used by the fault-injection tests and ``bench/policy.py``: it stands in for a flaky inference server, not for a
model. Faults are scripted per request ``seed`` (one seed per problem sample), as a list of actions for its
successive tries, so outcomes do not depend on how concurrent requests interleave.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ACTIONS = ("ok", "429", "500", "503", "401", "malformed", "truncated", "slow", "no_choices")


def default_reply(body: dict[str, Any]) -> str:
    """A canned answer: a tiny, correct gurobipy program (the content is irrelevant to transport tests)."""
    return ("Sets: none.\n\n```python\nimport gurobipy as gp\nm = gp.Model()\nx = m.addVar(ub=4)\n"
            "m.setObjective(3 * x, gp.GRB.MAXIMIZE)\nm.optimize()\nprint(m.ObjVal)\n```\n")


class _QuietServer(ThreadingHTTPServer):
    # The default listen backlog (5) drops the SYNs of a concurrent client's burst of connections; the kernel
    # retries them after 1 s, which would make the server, not the client, the bottleneck.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeout, truncated test) is expected here; anything else still prints."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ScriptedServer:
    def __init__(self, *, delay_s: float = 0.0, slow_s: float = 5.0, script: dict[int, list[str]] | None = None,
                 reply: Callable[[dict[str, Any]], str] = default_reply, retry_after_s: float = 0.05) -> None:
        self.delay_s, self.slow_s, self.retry_after_s = delay_s, slow_s, retry_after_s
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.reply = reply
        self.log: list[tuple[int, str]] = []  # (seed, action) per request received
        self._lock = threading.Lock()
        self._tries: dict[int, int] = {}
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def requests_for(self, seed: int) -> int:
        return sum(1 for s, _ in self.log if s == seed)

    def _next_action(self, seed: int) -> str:
        with self._lock:
            k = self._tries.get(seed, 0)
            self._tries[seed] = k + 1
            plan = self.script.get(seed, [])
            # After the plan: "ok", unless its last action ends in "!" (e.g. "500!" = keep failing forever).
            action = plan[k] if k < len(plan) else (plan[-1] if plan and plan[-1].endswith("!") else "ok")
            action = action.rstrip("!")
            self.log.append((seed, action))
            return action

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                      declared: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(declared if declared is not None else len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                seed = int(body.get("seed", -1))
                action = server._next_action(seed)
                if server.delay_s:
                    time.sleep(server.delay_s)
                ok = json.dumps({"id": "cmpl", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": server.reply(body)}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 20}}).encode()
                if action == "ok":
                    self._send(200, ok)
                elif action == "429":
                    self._send(429, b'{"error": "rate limited"}', {"Retry-After": f"{server.retry_after_s:g}"})
                elif action in ("500", "503", "401"):
                    self._send(int(action), b'{"error": "scripted failure"}')
                elif action == "malformed":
                    self._send(200, b"<html>upstream proxy error</html>")
                elif action == "no_choices":
                    self._send(200, b'{"choices": []}')
                elif action == "truncated":
                    # Declare the full length, send a third, then drop the connection: a body cut in transit.
                    self._send(200, ok[: len(ok) // 3], declared=len(ok))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif action == "slow":
                    time.sleep(server.slow_s)
                    try:
                        self._send(200, ok)
                    except OSError:
                        pass  # the client gave up long ago

        return Handler
