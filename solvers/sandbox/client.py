"""A client of ``sandbox serve``: the same ``run`` / ordered ``map`` as a local pool, over HTTP.

``SandboxConfig(backend="server", server_url=URL)`` routes ``run_program`` / ``run_batch`` here. The token comes
from ``FLYWHEEL_SANDBOX_TOKEN`` (or ``FLYWHEEL_SANDBOX_TOKEN_FILE``). A 429 / 503 is retried after its
``Retry-After``; a server that stays unreachable yields ``sandbox_error`` executions (infrastructure, never the
program's fault), not an exception, as a local pool's broken worker does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from solvers.records import ExecStatus, Execution
from solvers.sandbox.program import Program
from solvers.sandbox.wire import execution_from_json, program_row

CHUNK = 8  # programs per /v1/batch request
IN_FLIGHT = 4  # requests one map keeps open at once


def env_token() -> str | None:
    token = os.environ.get("FLYWHEEL_SANDBOX_TOKEN")
    path = os.environ.get("FLYWHEEL_SANDBOX_TOKEN_FILE")
    if not token and path:
        with open(path, encoding="utf-8") as fh:
            token = fh.read().strip()
    return token or None


class SandboxClient:
    def __init__(self, url: str, token: str | None = None, *, timeout_s: float | None = None, retries: int | None = None,
                 chunk: int = CHUNK, in_flight: int = IN_FLIGHT) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.token = token if token is not None else env_token()
        self.timeout_s = timeout_s
        self.retries = int(os.environ.get("FLYWHEEL_SANDBOX_RETRIES", 8)) if retries is None else retries
        self.chunk = max(1, chunk)
        self.in_flight = max(1, in_flight)
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers,
                                  timeout=httpx.Timeout(connect=10.0, read=None, write=60.0, pool=None),
                                  limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries on 429/503 (Retry-After) and connection errors; raises ``ConnectionError`` at the end,
        ``PermissionError`` on 401, ``ValueError`` on 400."""
        import httpx

        delay = 0.2
        last = ""
        for _ in range(self.retries + 1):
            try:
                r = self._http.post(path, json=body)
            except httpx.TransportError as exc:
                last = f"sandbox server {self.url} unreachable: {exc!r}"
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            if r.status_code in (429, 503):
                last = f"sandbox server {self.url} busy ({r.status_code})"
                time.sleep(min(30.0, float(r.headers.get("retry-after", delay))))
                continue
            if r.status_code == 401:
                raise PermissionError(f"sandbox server {self.url} refused the token (401)")
            if r.status_code == 400:
                raise ValueError(f"sandbox server {self.url}: {r.json()}")
            r.raise_for_status()
            return r.json()
        raise ConnectionError(last)

    def _batch(self, programs: list[Program], timeout_s: float | None) -> list[Execution]:
        body: dict[str, Any] = {"programs": [program_row(p) for p in programs], "mps": True}
        if (timeout_s or self.timeout_s) is not None:
            body["timeout_s"] = timeout_s or self.timeout_s
        try:
            results = self.post("/v1/batch", body)["results"]
        except ConnectionError as exc:
            return [Execution(program_id=p.program_id, status=ExecStatus.SANDBOX_ERROR, error=str(exc))
                    for p in programs]
        return [execution_from_json(r) for r in results]

    def run(self, program: Program, timeout_s: float | None = None) -> Execution:
        return self._batch([program], timeout_s)[0]

    def map(self, programs: Iterable[Program], progress: Callable[[Execution], Any] | None = None,
            timeout_s: float | None = None) -> Iterator[Execution]:
        """Executions in input order; ``in_flight`` chunks of ``chunk`` programs are sent at once."""
        items = list(programs)
        chunks = [items[i:i + self.chunk] for i in range(0, len(items), self.chunk)]
        with ThreadPoolExecutor(self.in_flight, thread_name_prefix="sandbox-client") as ex:
            for executions in ex.map(lambda c: self._batch(c, timeout_s), chunks):
                for e in executions:
                    if progress is not None:
                        progress(e)
                    yield e


_clients: dict[str, SandboxClient] = {}
_clients_lock = threading.Lock()


def shared_client(url: str) -> SandboxClient:
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = SandboxClient(url)
        return client
