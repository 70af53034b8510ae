"""``flywheel sandbox serve``: the sandbox as a long-running HTTP service that keeps its warm pools.

    POST /v1/run       one program   {"id", "code", "entry"?, "args"?, "files"?, "timeout_s"?, "mps"?}
                                     -> the execution JSON of ``sandbox run --json`` (plus "id")
    POST /v1/batch     many          {"programs": [...rows of ``sandbox batch``...], "timeout_s"?, "mps"?}
                                     -> {"results": [...]} in input order
    POST /run_code     SandboxFusion's request and response (``fusion.py``)
    GET  /healthz      the process answers;  GET /readyz: it takes work (503 while draining)
    GET  /metrics      Prometheus text: programs by status, latency histogram, queue depth, in flight, rejections
    GET  /v1/info      limits and the warm flavours

Admission: at most ``workers`` programs run at once; up to ``max_queue`` more wait; a request that would exceed that
is refused whole with 429 and ``Retry-After`` (seconds, from the recent latency). A request's ``timeout_s`` (or
SandboxFusion's ``run_timeout``) is capped by the server's ``max_timeout_s``; each distinct timeout gets its own pool
(a few at most, least recently used closed). Auth: ``Authorization: Bearer <token>`` on everything but /healthz
and /readyz when a token is configured; a server bound beyond loopback refuses to start without one.
A client that disconnects mid-request: its programs not yet started are dropped from the queue, those running
finish (their slot is freed normally) and are logged, never lost silently. SIGTERM: the server stops accepting
connections, every request in flight runs to its end and is answered, then the pools close (graceful drain).
Logs: one JSON object per line on stderr (request id, endpoint, programs, statuses, seconds, client).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import math
import os
import sys
import threading
import time
import uuid
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request  # at module level: the endpoints' annotations are strings (resolved by FastAPI)

from solvers.errors import SandboxError
from solvers.records import ExecStatus, Execution
from solvers.sandbox.program import DEFAULT_PRELOAD, DEFAULT_TIMEOUT_S, ON_DEMAND, Program, SandboxConfig

log = logging.getLogger("flywheel.sandbox.serve")

MAX_POOLS = 3  # distinct per-request timeouts kept warm at once


@dataclass
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8790
    workers: int = 2
    token: str | None = None
    max_queue: int = 256  # programs waiting beyond the ``workers`` running
    max_timeout_s: float = 60.0  # cap on any request's timeout
    default_timeout_s: float = DEFAULT_TIMEOUT_S  # the one sandbox default (program.py)
    max_batch: int = 1024
    config: SandboxConfig = field(default_factory=SandboxConfig)  # limits and isolation (its timeout is replaced)
    warm: tuple[str, ...] = ()  # flavours (preload modules) to start in the background once ready
    graceful_s: float | None = None  # longest drain on SIGTERM (None: until every request is answered)


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str | None) -> str | None:
    """The bearer token: the file's first line, else ``FLYWHEEL_SANDBOX_TOKEN``, else None."""
    if path:
        try:
            token = open(path, encoding="utf-8").read().strip()  # noqa: SIM115 - tiny file
        except OSError as exc:
            raise SandboxError(f"cannot read the token file: {exc}", culprit=path) from exc
        if not token:
            raise SandboxError("the token file is empty", culprit=path)
        return token
    return os.environ.get("FLYWHEEL_SANDBOX_TOKEN") or None


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {"ts": round(record.created, 3), "level": record.levelname.lower(), "event": record.getMessage()}
        data.update(getattr(record, "fields", {}))
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def _log(event: str, level: int = logging.INFO, **fields: Any) -> None:
    log.log(level, event, extra={"fields": fields})


class Overloaded(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"queue full; retry after {retry_after} s")
        self.retry_after = retry_after


class Service:
    """The pools, the bounded queue and the metrics behind the HTTP app (usable without HTTP, e.g. in tests)."""

    def __init__(self, settings: ServeSettings) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.settings = settings
        self.capacity = settings.workers + settings.max_queue
        self._executor = ThreadPoolExecutor(settings.workers, thread_name_prefix="serve")
        self._lock = threading.Lock()
        self._pools: OrderedDict[float, Any] = OrderedDict()
        self.pending = 0  # admitted, not finished (running + queued)
        self.running = 0
        self.draining = False
        self.started = time.time()
        self._recent: deque[float] = deque(maxlen=64)
        self.registry = CollectorRegistry()
        r = self.registry
        self.m_programs = Counter("flywheel_sandbox_programs", "Programs run, by execution status", ["status"],
                                  registry=r)
        self.m_latency = Histogram("flywheel_sandbox_program_seconds", "Admission to result, per program",
                                   buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
                                   registry=r)
        self.m_queue = Gauge("flywheel_sandbox_queue_depth", "Programs admitted and waiting for a worker", registry=r)
        self.m_running = Gauge("flywheel_sandbox_in_flight", "Programs running now", registry=r)
        self.m_rejected = Counter("flywheel_sandbox_rejected", "Requests refused, by reason", ["reason"], registry=r)
        self.m_requests = Counter("flywheel_sandbox_requests", "HTTP requests, by endpoint and code",
                                  ["endpoint", "code"], registry=r)
        self.m_abandoned = Counter("flywheel_sandbox_abandoned", "Programs whose client went away", ["stage"],
                                   registry=r)

    # -- pools -------------------------------------------------------------------------------------------------
    def timeout_for(self, requested: float | None) -> float:
        s = self.settings
        t = s.default_timeout_s if requested is None or requested <= 0 else float(requested)
        return min(t, s.max_timeout_s)

    def pool(self, timeout_s: float) -> Any:
        from solvers.sandbox.pool import Pool

        key = round(timeout_s, 3)
        evicted = None
        with self._lock:
            pool = self._pools.pop(key, None)
            if pool is None:
                pool = Pool(self.settings.config.model_copy(update={"timeout_s": key}), self.settings.workers)
            self._pools[key] = pool
            if len(self._pools) > MAX_POOLS:
                evicted = self._pools.popitem(last=False)[1]
        if evicted is not None:
            evicted.close()  # its in-flight programs still finish
        return pool

    def warm(self) -> None:
        """Start one worker per configured flavour, in the background, one after another (a request's own
        flavour, started on demand, is never queued behind this)."""
        flavours = self.settings.warm

        def go() -> None:
            pool = self.pool(self.timeout_for(None))
            for module in flavours:
                if self.draining:
                    return
                t0 = time.perf_counter()
                execution = pool.run(Program(program_id=f"warm-{module}", code=f"import {module}\n"))
                _log("warm", flavour=module, status=str(execution.status), seconds=round(time.perf_counter() - t0, 3))

        if flavours:
            threading.Thread(target=go, name="serve-warm", daemon=True).start()

    # -- admission -----------------------------------------------------------------------------------------------
    def retry_after(self) -> int:
        lat = sorted(self._recent)
        typical = lat[len(lat) // 2] if lat else 1.0
        return max(1, math.ceil(typical * self.pending / max(1, self.settings.workers)))

    def submit(self, programs: list[Program], timeout_s: float) -> list[Future[Execution]]:
        """Admit all or none (``Overloaded``); each future resolves to the program's execution."""
        n = len(programs)
        with self._lock:
            if self.draining:
                raise Overloaded(5)
            if self.pending + n > self.capacity:
                self.m_rejected.labels("queue_full").inc()
                raise Overloaded(self.retry_after())
            self.pending += n
            self.m_queue.set(self.pending - self.running)
        pool = self.pool(timeout_s)
        return [self._executor.submit(self._run_one, pool, p, time.perf_counter()) for p in programs]

    def _run_one(self, pool: Any, program: Program, admitted: float) -> Execution:
        with self._lock:
            self.running += 1
            self.m_running.set(self.running)
            self.m_queue.set(self.pending - self.running)
        try:
            try:
                execution = pool.run(program)
            except Exception as exc:  # noqa: BLE001 - infrastructure: reported, never raised at the client
                _log("pool_error", logging.ERROR, program=program.program_id, error=repr(exc))
                execution = Execution(program_id=program.program_id, status=ExecStatus.SANDBOX_ERROR,
                                      error=f"sandbox server: {exc}")
            seconds = time.perf_counter() - admitted
            self.m_programs.labels(str(execution.status)).inc()
            self.m_latency.observe(seconds)
            self._recent.append(seconds)
            return execution
        finally:
            with self._lock:
                self.running -= 1
                self.pending -= 1
                self.m_running.set(self.running)
                self.m_queue.set(self.pending - self.running)

    def forget(self, futures: list[Future[Execution]], request_id: str) -> None:
        """The client went away: drop what has not started; log what still runs when it ends."""
        dropped = 0
        for f in futures:
            if f.cancel():
                dropped += 1
                with self._lock:
                    self.pending -= 1
                    self.m_queue.set(self.pending - self.running)
            else:
                f.add_done_callback(lambda fut: self._abandoned(fut, request_id))
        if dropped:
            self.m_abandoned.labels("queued").inc(dropped)
        _log("client_disconnected", logging.WARNING, request=request_id, dropped_queued=dropped,
             still_running=len(futures) - dropped)

    def _abandoned(self, fut: Future[Execution], request_id: str) -> None:
        self.m_abandoned.labels("running").inc()
        if not fut.cancelled() and fut.exception() is None:
            e = fut.result()
            _log("abandoned_result", logging.WARNING, request=request_id, program=e.program_id, status=str(e.status))

    def close(self) -> None:
        self.draining = True
        self._executor.shutdown(wait=True)  # every admitted program ends (and is answered) before the pools close
        with self._lock:
            pools, self._pools = list(self._pools.values()), OrderedDict()
        for p in pools:
            p.close()


def create_app(settings: ServeSettings, service: Service | None = None) -> Any:
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from solvers.sandbox import fusion
    from solvers.sandbox.wire import execution_json, program_from_row

    svc = service or Service(settings)
    pod = f"flywheel-{os.uname().nodename}-{os.getpid()}"

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        _log("ready", host=settings.host, port=settings.port, workers=settings.workers,
             auth=bool(settings.token), startup_s=round(time.time() - svc.started, 3))
        svc.warm()
        yield
        _log("draining", pending=svc.pending)
        await asyncio.to_thread(svc.close)
        _log("stopped")

    app = FastAPI(title="flywheel sandbox", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = svc
    open_paths = {"/healthz", "/readyz"}

    class AuthAndCount:
        """Bearer-token check and per-endpoint request counts, as plain ASGI (Starlette's ``BaseHTTPMiddleware``
        would hide a client's disconnect from the endpoints)."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await self.inner(scope, receive, send)
                return
            path = scope["path"]
            if settings.token and path not in open_paths:
                header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
                given = header[7:] if header[:7].lower() == "bearer " else ""
                if not hmac.compare_digest(given.encode(), settings.token.encode()):
                    svc.m_rejected.labels("auth").inc()
                    svc.m_requests.labels(path, "401").inc()
                    client = scope.get("client")
                    _log("auth_refused", logging.WARNING, endpoint=path,
                         client=f"{client[0]}:{client[1]}" if client else "?")
                    response = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                            headers={"WWW-Authenticate": "Bearer"})
                    await response(scope, receive, send)
                    return
            code = {"v": "0"}

            async def counting_send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    code["v"] = str(message["status"])
                await send(message)

            try:
                await self.inner(scope, receive, counting_send)
            finally:
                svc.m_requests.labels(path, code["v"]).inc()

    app.add_middleware(AuthAndCount)

    def _client(request: Request) -> str:
        return f"{request.client.host}:{request.client.port}" if request.client else "?"

    async def _await(request: Request, futures: list[Future[Execution]], request_id: str) -> list[Execution] | None:
        """Wait for every future; None if the client disconnected first (see ``Service.forget``)."""
        waiting = asyncio.ensure_future(asyncio.gather(*(asyncio.wrap_future(f) for f in futures)))
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=0.25)
            if done:
                return waiting.result()
            if await request.is_disconnected():
                svc.forget(futures, request_id)
                waiting.cancel()
                return None

    async def _run(request: Request, programs: list[Program], timeout: float | None, endpoint: str) -> Any:
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:12]
        t0 = time.perf_counter()
        effective = svc.timeout_for(timeout)
        try:
            futures = svc.submit(programs, effective)
        except Overloaded as exc:
            _log("rejected", logging.WARNING, request=request_id, endpoint=endpoint, programs=len(programs),
                 pending=svc.pending, retry_after=exc.retry_after, client=_client(request))
            return JSONResponse({"error": str(exc), "retry_after": exc.retry_after}, status_code=429 if not
                                svc.draining else 503, headers={"Retry-After": str(exc.retry_after)})
        executions = await _await(request, futures, request_id)
        if executions is None:
            return Response(status_code=499)
        statuses: dict[str, int] = {}
        for e in executions:
            statuses[str(e.status)] = statuses.get(str(e.status), 0) + 1
        _log("request", request=request_id, endpoint=endpoint, programs=len(programs), statuses=statuses,
             timeout_s=effective, seconds=round(time.perf_counter() - t0, 4), client=_client(request))
        return executions

    def _bad(message: str, culprit: str) -> JSONResponse:
        return JSONResponse({"error": message, "culprit": culprit}, status_code=400)

    async def _body(request: Request) -> Any:
        try:
            return json.loads(await request.body())
        except ValueError as exc:
            raise SandboxError(f"body is not JSON: {exc}", culprit="body") from exc

    @app.exception_handler(SandboxError)
    async def sandbox_error(_request: Request, exc: SandboxError) -> JSONResponse:
        return _bad(exc.args[0] if exc.args else str(exc), getattr(exc, "culprit", "") or "")

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "uptime_s": round(time.time() - svc.started, 3)}

    @app.get("/readyz")
    async def readyz() -> Any:
        if svc.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        return {"status": "ready", "pending": svc.pending, "capacity": svc.capacity}

    @app.get("/metrics")
    async def metrics() -> Any:
        return PlainTextResponse(generate_latest(svc.registry).decode(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/info")
    async def info() -> dict[str, Any]:
        return {"workers": settings.workers, "max_queue": settings.max_queue, "max_timeout_s": settings.max_timeout_s,
                "default_timeout_s": settings.default_timeout_s, "max_batch": settings.max_batch,
                "isolation": settings.config.isolation, "memory_mb": settings.config.memory_mb,
                "pools": list(svc._pools), "pending": svc.pending}

    @app.post("/v1/run")
    async def run(request: Request) -> Any:
        row = await _body(request)
        program = program_from_row(row, "body")
        out = await _run(request, [program], row.get("timeout_s"), "/v1/run")
        if not isinstance(out, list):
            return out
        return {"id": program.program_id} | execution_json(out[0], bool(row.get("mps")))

    @app.post("/v1/batch")
    async def batch(request: Request) -> Any:
        body = await _body(request)
        rows = body.get("programs") if isinstance(body, dict) else None
        if not isinstance(rows, list) or not rows:
            return _bad("expected {\"programs\": [ {id, code, ...}, ... ]}", "programs")
        if len(rows) > settings.max_batch:
            return _bad(f"{len(rows)} programs in one batch; the limit is {settings.max_batch}", "programs")
        programs = [program_from_row(r, f"programs[{i}]") for i, r in enumerate(rows)]
        out = await _run(request, programs, body.get("timeout_s"), "/v1/batch")
        if not isinstance(out, list):
            return out
        mps = bool(body.get("mps"))
        return {"results": [{"id": e.program_id} | execution_json(e, mps) for e in out]}

    @app.post("/run_code")
    async def run_code(request: Request) -> Any:
        try:
            req = fusion.RunCodeRequest.model_validate(await _body(request))
        except ValueError as exc:
            return _bad(f"not a RunCodeRequest: {exc}", "body")
        try:
            program = fusion.to_program(req, f"run_code-{uuid.uuid4().hex[:10]}")
        except fusion.FusionInputError as exc:
            return fusion.RunCodeResponse(status="SandboxError", message=str(exc), executor_pod_name=pod).model_dump()
        out = await _run(request, [program], req.run_timeout, "/run_code")
        if not isinstance(out, list):
            return out
        return fusion.to_response(out[0], req.fetch_files, pod).model_dump()

    return app


def configure_logging(stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


def serve(settings: ServeSettings) -> None:
    """Run until SIGTERM / SIGINT, then drain."""
    import uvicorn

    if not is_loopback(settings.host) and not settings.token:
        raise SandboxError("refusing to serve beyond loopback without a bearer token (--token-file or "
                           "FLYWHEEL_SANDBOX_TOKEN)", culprit="--host")
    if settings.workers <= 0:
        raise SandboxError("must be positive", culprit="--workers")
    configure_logging()
    service = Service(settings)
    app = create_app(settings, service)

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            service.draining = True  # /readyz says 503 from now on; new admissions are refused
            _log("signal", signal=sig, pending=service.pending)
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None, access_log=False,
                            timeout_graceful_shutdown=settings.graceful_s, lifespan="on")
    # uvicorn re-raises the signal it caught once it has drained, with the handler that was there before it: a
    # do-nothing handler makes a drained server exit 0 (a clean stop for a supervisor), not "killed by SIGTERM".
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    DrainingServer(config).run()
    _log("exit", pending=service.pending)


def default_warm() -> tuple[str, ...]:
    """Flavours started in the background after ready: each common solver library alone (the common program imports
    one); the rarer libraries' workers start on first use."""
    return tuple(m for m in DEFAULT_PRELOAD if m not in ("numpy", "pandas", *ON_DEMAND))
