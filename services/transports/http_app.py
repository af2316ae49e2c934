"""The HTTP face of a served grader: /v1/score, OpenRLHF's /get_reward, info, health, metrics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping, Sequence
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from arbiter.contract import GraderInfo, ScoreRequest, ScoreResponse, Status
from arbiter.openrlhf import BodyError, OpenRLHFBatch
from services.common.fleet import WORKERS_HEADER, FleetScope, merge_metrics
from services.common.logs import bounded_request_id, request_id_var
from services.common.offload import LARGE, maybe_off_loop, off_loop
from services.scoring.engine import ScoringEngine
from services.transports.auth import OPEN_HTTP_PATHS, PathTokenRouter, authorized, authorized_path

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

GRADER_HEADER = "x-arbiter-grader"
T = TypeVar("T")


async def _disconnected(receive: Receive) -> None:
    """Return once the client has gone (ASGI http.disconnect); the body must have been read."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(receive: Receive, work: Coroutine[Any, Any, T]) -> T | None:
    """`work`'s value, or None when the client disconnects first: `work` is then cancelled, and with
    it the scoring of samples nobody else waits for (a judge's upstream call, a sandbox run), which
    would otherwise hold their slots until the deadline.

    `work` runs in this task and a watcher task cancels it when the client leaves (one extra task
    a request, not two, and no asyncio.wait). A watcher cancelled before it runs again never
    cancels this task: its cancellation is delivered first (tests/test_edge_cancellation.py).
    """
    handler = asyncio.current_task()
    assert handler is not None
    left = False

    async def watch() -> None:
        nonlocal left
        await _disconnected(receive)
        left = True
        handler.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if left and handler.uncancel() == 0:
            return None  # the client left: nobody wants the answer
        raise  # this handler itself was cancelled (the server stopping)
    finally:
        watcher.cancel()


class _BodyTooLargeError(Exception):
    pass


# A /v1/score body parsed and validated in a thread (a LARGE one), handed to the route in the scope:
# the framework itself then parses only a placeholder on the event loop.
_PARSED = "arbiter.score_request"
_BODY_BYTES = "arbiter.body_bytes"
_PLACEHOLDER = b'{"samples": []}'


def _parse_score_request(body: bytes) -> ScoreRequest | RequestValidationError:
    """What FastAPI's body handling gives for a ScoreRequest body: the request, or the same 422."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        error = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error"}
        return RequestValidationError([{**error, "input": {}, "ctx": {"error": exc.msg}}])
    except (ValueError, RecursionError) as exc:
        error = {"type": "json_invalid", "loc": ("body",), "msg": f"JSON decode error: {exc}"[:200]}
        return RequestValidationError([{**error, "input": {}}])
    try:
        return ScoreRequest.model_validate(data)
    except ValidationError as exc:
        return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])


def _replay(body: bytes, rest: Receive) -> Receive:
    """A receive that gives `body` whole, then whatever `rest` says (the client's disconnect)."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if given:
            return await rest()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _is_json(headers: dict[bytes, bytes]) -> bool:
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


class KitMiddleware:
    """Pure ASGI (no per-request task): request id, body size limit, request metrics."""

    def __init__(
        self,
        app: ASGIApp,
        engine: ScoringEngine,
        max_body_bytes: int,
        token: str | None,
        path_token_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.engine = engine
        self.max_body = max_body_bytes
        self.token = token
        self.path_token_prefixes = path_token_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        request_id = bounded_request_id(headers.get(b"x-request-id", b"")[:256].decode("latin-1"))
        token = request_id_var.set(request_id)
        path = scope.get("path", "")
        endpoint = path if path in _KNOWN_PATHS else "other"
        metrics = self.engine.metrics
        started = time.monotonic()
        status_code = 500
        response_started = False

        presented = headers.get(b"authorization", b"").decode("latin-1")
        if (
            self.token is not None
            and path not in OPEN_HTTP_PATHS
            and not authorized(presented, self.token)
            and not authorized_path(path, self.path_token_prefixes, self.token)
        ):
            await _send_json(send, 401, _error("unauthorized", "missing or wrong bearer token"), request_id)
            metrics.request_done("http", endpoint, "401")
            request_id_var.reset(token)
            return

        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await _send_json(send, 413, _error("body_too_large", self._too_large(int(declared))), request_id)
            metrics.request_done("http", endpoint, "413")
            request_id_var.reset(token)
            return

        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise _BodyTooLargeError
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal status_code, response_started
            if message["type"] == "http.response.start":
                status_code = message["status"]
                response_started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode("latin-1"))]
            await send(message)

        metrics.inflight.inc()
        try:
            receive_app: Receive = limited_receive
            if path == "/v1/score" and scope.get("method") == "POST" and _is_json(headers):
                body = await read_body(limited_receive)
                if body is None:  # the client left before its body was in
                    status_code = 499
                    return
                scope[_BODY_BYTES] = len(body)
                if len(body) >= LARGE:
                    # A large request (thousands of small samples) is parsed and validated in a
                    # thread: on the loop, 28 MB of JSON stalled every other client for seconds.
                    scope[_PARSED] = await off_loop(_parse_score_request, body)
                    body = _PLACEHOLDER
                receive_app = _replay(body, limited_receive)
            await self.app(scope, receive_app, tracking_send)
        except _BodyTooLargeError:
            if not response_started:
                status_code = 413
                await _send_json(send, 413, _error("body_too_large", self._too_large(received)), request_id)
        finally:
            metrics.inflight.dec()
            metrics.request_done("http", endpoint, str(status_code), time.monotonic() - started)
            request_id_var.reset(token)

    def _too_large(self, size: int) -> str:
        return f"body of {size} bytes exceeds the limit of {self.max_body} bytes (max_body_bytes)"


_KNOWN_PATHS = {"/v1/score", "/get_reward", "/v1/info", "/v1/stats", "/healthz", "/readyz", "/metrics"}


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body; None when the client disconnects first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message}}


async def _send_json(send: Send, status: int, payload: dict[str, Any], request_id: str) -> None:
    body = orjson.dumps(payload)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-request-id", request_id.encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _dump_model(payload: ScoreResponse) -> bytes:
    return orjson.dumps(payload.model_dump(mode="json"))


def _json(payload: Any, status: int = 200, info: GraderInfo | None = None) -> Response:
    """A JSON response of `payload` (or of bytes already serialized)."""
    headers = {GRADER_HEADER: f"{info.name}/{info.version}/{info.config_hash}"} if info else None
    body = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _parse_openrlhf(body: bytes, eos_markers: Sequence[str]) -> OpenRLHFBatch:
    """The stdlib, not orjson: it reads what Python clients send (NaN, lone surrogates) and keeps
    integers beyond 64 bits exact (orjson rounds them to floats: a wrong label). UTF-8 is decoded
    first (what every client sends; bytes make json sniff the encoding on every request)."""
    try:
        text: str | bytes = body.decode("utf-8-sig")  # a BOM is ignored, as json.loads(bytes) does
    except UnicodeDecodeError:
        text = body  # json.loads reads UTF-16 and UTF-32 bodies too, and names what is wrong
    return OpenRLHFBatch.parse(json.loads(text), eos_markers)


async def openrlhf_answer(engine: ScoringEngine, body: bytes) -> tuple[int, dict[str, Any]]:
    """/get_reward's HTTP status and JSON payload for a raw body.

    A large body is parsed in a thread (services/common/offload.py): the event loop keeps
    serving everyone else meanwhile.
    """
    server = engine.server
    try:
        batch = await maybe_off_loop(len(body), _parse_openrlhf, body, engine.eos_markers)
    except BodyError as exc:
        return 400, _error("invalid_body", str(exc))
    except (ValueError, RecursionError) as exc:
        return 400, _error("invalid_json", f"body is not valid JSON: {exc}")
    if len(batch.items) > server.max_samples_per_request:
        problem = f"{len(batch.items)} samples; limit {server.max_samples_per_request}"
        return 413, _error("too_many_samples", problem)
    usable = batch.samples
    scored = await engine.score(usable) if usable else []
    answer = await maybe_off_loop(  # thousands of items: their parallel lists built in a thread
        len(body),
        batch.respond,
        scored,
        lambda problem: engine.finish_fallback(None, Status.INVALID_INPUT, problem),
        engine.log_keys,
    )
    return 200, answer


def _lean_get_reward(engine: ScoringEngine) -> ASGIApp:
    """POST /get_reward as a bare ASGI app: OpenRLHF's one request per sample skips the
    framework's routing, request objects and middleware layers (about half the edge's cost)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        if body is None:
            return  # the client left before its body was in
        answer = await unless_disconnected(receive, openrlhf_answer(engine, body))
        if answer is None:
            return  # the client hung up: its samples' work was cancelled, nobody reads a reply
        status, payload = answer
        body = await maybe_off_loop(512 * len(payload.get("rewards") or ()), orjson.dumps, payload)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 200:
            info = engine.info
            identity = f"{info.name}/{info.version}/{info.config_hash}".encode()
            headers.append((GRADER_HEADER.encode(), identity))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


class _KitApp(FastAPI):
    """FastAPI with POST /get_reward served in front of it, through the same KitMiddleware
    (auth, body limit, request id, metrics) as every other path."""

    lean: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lean = self.lean
        http = scope["type"] == "http"
        if lean is not None and http and scope["path"] == "/get_reward" and scope["method"] == "POST":
            await lean(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def build_http_app(
    engine: ScoringEngine,
    title: str | None = None,
    routers: Sequence[APIRouter] = (),
    token: str | None = None,
    fleet: FleetScope | None = None,
) -> FastAPI:
    """A FastAPI app serving `engine` (plus a service's own routers); the caller owns start/stop.

    With a `fleet` (sibling workers on the same port), /metrics is every worker's, merged.
    """
    server = engine.server
    app = _KitApp(title=title or f"arbiter {engine.info.name}", version=engine.info.version)
    app.lean = KitMiddleware(_lean_get_reward(engine), engine, server.max_body_bytes, token)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        # Without the offending input: it may be NaN or huge, and must not break the error itself.
        errors = [{k: v for k, v in e.items() if k not in ("input", "ctx")} for e in exc.errors()[:20]]
        problems = [
            f"{'.'.join(str(p) for p in err.get('loc', ()) if p != 'body') or 'body'}: {err.get('msg')}"
            for err in errors
        ]
        return JSONResponse(
            status_code=422, content={**_error("invalid_request", "; ".join(problems)), "detail": errors}
        )

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(status_code=exc.status_code, content=_error("http_error", str(exc.detail)))

    @app.post("/v1/score", response_model=ScoreResponse)
    async def score(request: ScoreRequest, http: Request) -> Response:
        parsed = http.scope.get(_PARSED)
        if isinstance(parsed, RequestValidationError):
            raise parsed
        if isinstance(parsed, ScoreRequest):
            request = parsed  # a large body, parsed and validated off the loop (KitMiddleware)
        if len(request.samples) > server.max_samples_per_request:
            raise HTTPException(
                413,
                f"{len(request.samples)} samples in one request; the limit is "
                f"{server.max_samples_per_request} (max_samples_per_request)",
            )
        if request.request_id:
            request_id_var.set(bounded_request_id(request.request_id))
        results = await unless_disconnected(
            http.receive, engine.score(request.samples, request.timeout_s or None)
        )
        if results is None:  # the client hung up: its samples' work was cancelled
            return Response(status_code=499)
        payload = ScoreResponse(results=results, grader=engine.info, request_id=request_id_var.get())
        # Every sample shed by a full queue: say so at the HTTP level too, so clients back off.
        # (/get_reward never does: OpenRLHF would retry and then crash; it gets the fallbacks.)
        shed = bool(results) and all(r.status is Status.OVERLOADED for r in results)
        # The reply of a large request is serialized in a thread too.
        size = max(int(http.scope.get(_BODY_BYTES, 0)), 512 * len(results))
        dumped = await maybe_off_loop(size, _dump_model, payload)
        response = _json(dumped, status=429 if shed else 200, info=engine.info)
        if shed:
            response.headers["retry-after"] = "1"
        return response

    @app.post("/get_reward")
    async def get_reward(request: Request) -> Response:
        # Reached only when this app is mounted without its own front (the lean path below).
        body = await request.body()
        answer = await unless_disconnected(request.receive, openrlhf_answer(engine, body))
        if answer is None:
            return Response(status_code=499)
        status, payload = answer
        return _json(payload, status, info=engine.info if status == 200 else None)

    @app.get("/v1/info", response_model=GraderInfo)
    async def info() -> Response:
        return _json(engine.info.model_dump(mode="json"))

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        if not engine.ready:
            return _json({"status": "starting"}, 503)
        return _json({"status": "ready", "queue": len(engine.batcher)})

    def own_metrics() -> bytes:
        return generate_latest(engine.metrics.registry)

    if fleet is not None:
        fleet.provide("metrics", own_metrics)  # this worker's part of every sibling's /metrics

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> Response:
        if fleet is None:
            return Response(own_metrics(), media_type=CONTENT_TYPE_LATEST)
        gathered = await fleet.gather("metrics")
        merged = await off_loop(merge_metrics, gathered.parts)
        return Response(merged, media_type=CONTENT_TYPE_LATEST, headers={WORKERS_HEADER: gathered.coverage})

    for router in routers:
        app.include_router(router)
    prefixes = tuple(r.token_prefix for r in routers if isinstance(r, PathTokenRouter))
    app.add_middleware(
        KitMiddleware,
        engine=engine,
        max_body_bytes=server.max_body_bytes,
        token=token,
        path_token_prefixes=prefixes,
    )
    return app
