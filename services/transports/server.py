"""Serve any grader over gRPC and HTTP at once, from one engine (one cache, one batcher).

`GraderServer` is the unit: `arbiter serve` starts several in one event loop, a
service's `__main__` starts one, tests start them on port 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
import uvicorn
from fastapi import APIRouter
from grpc_health.v1 import health

from services.common.fleet import FleetScope
from services.common.metrics import KitMetrics
from services.common.settings import CacheSettings, EmergenceSettings, ServerSettings
from services.common.tls import grpc_server_credentials, uvicorn_ssl_options
from services.scoring.engine import Observer, ScoringEngine, assemble_engine
from services.scoring.extension import ExtensionFactory
from services.scoring.grader import Grader
from services.transports.auth import load_token
from services.transports.grpc_app import NOT_SERVING, SERVICE_NAME, SERVING, build_grpc_server
from services.transports.http_app import build_http_app
from services.transports.httpguard import HttpLimits, guarded_protocol

log = logging.getLogger(__name__)


class _UvicornServer(uvicorn.Server):
    """Uvicorn without its own signal handling: the process owner stops every server."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to host:port; `reuse_port` lets sibling worker processes bind the same
    port (SO_REUSEPORT: the kernel spreads new connections across them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


class AsgiServer:
    """An ASGI app on uvicorn inside the running event loop, started and stopped by its owner.

    The kit's HTTP face uses it, and so do the test doubles of upstream servers (a fake
    OpenAI or vLLM endpoint), so they all bind, start and drain the same way.
    """

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, reuse_port: bool = False, **config: Any
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.reuse_port = reuse_port
        options: dict[str, Any] = {
            "lifespan": "off",
            "access_log": False,
            "log_config": None,
            "http": "httptools",
            "ws": "none",
            "proxy_headers": False,  # no proxy's X-Forwarded-* is trusted; one ASGI layer less per request
            "backlog": 4096,
            "timeout_keep_alive": 30,
            "timeout_graceful_shutdown": 5,
        }
        options.update(config)
        self._config = options
        self._server: _UvicornServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        sock = bind(self.host, self.port, self.reuse_port)
        self.port = sock.getsockname()[1]
        self._server = _UvicornServer(uvicorn.Config(self.app, **self._config))
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name=f"http-{self.port}")
        while not self._server.started:
            if self._task.done():
                self._task.result()  # re-raise why uvicorn could not start
                raise RuntimeError(f"HTTP server on port {self.port} exited during start-up")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to timeout_graceful_shutdown)."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
            self._server = self._task = None

    async def __aenter__(self) -> AsgiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class GraderServer:
    def __init__(
        self,
        name: str,
        grader: Grader,
        server: ServerSettings,
        cache: CacheSettings | None = None,
        emergence: EmergenceSettings | None = None,
        observers: Sequence[Observer] = (),
        routers: Sequence[APIRouter] = (),
        fleet: FleetScope | None = None,
        extensions: Sequence[ExtensionFactory] = (),
        engine_type: type[ScoringEngine] = ScoringEngine,  # the gateway's groups its samples
    ) -> None:
        self.name = name
        self.settings = server
        self.routers = list(routers)
        self.fleet = fleet  # sibling workers on the same ports (services/common/fleet.py), if any
        self.engine = assemble_engine(
            grader,
            server,
            cache,
            emergence,
            metrics=KitMetrics(),
            observers=observers,
            engine_type=engine_type,
        )
        # stateful parts over the engine (episodes): their routes and services beside the kit's
        self.extensions = [make(self.engine, fleet) for make in extensions]
        for extension in self.extensions:
            self.routers.extend(extension.routers)
        self.http_port = 0
        self.grpc_port = 0
        self._http: AsgiServer | None = None
        self._grpc: grpc.aio.Server | None = None
        self._health: health.aio.HealthServicer | None = None
        self._stopped = False

    @property
    def http_url(self) -> str:
        host = self.settings.host
        host = f"[{host}]" if ":" in host else host
        scheme = "https" if self.settings.tls.enabled else "http"
        return f"{scheme}://{host}:{self.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"{self.settings.host}:{self.grpc_port}" if self.grpc_port else ""

    async def start(self) -> None:
        token = load_token(self.settings.auth_token_env)  # refuse to start on a named but empty token
        await self.engine.start()
        for extension in self.extensions:
            await extension.start()
        limits = HttpLimits(
            max_header_bytes=self.settings.max_header_bytes,
            idle_timeout_s=self.settings.idle_timeout_s,
            header_timeout_s=self.settings.header_timeout_s,
            body_timeout_s=self.settings.body_timeout_s,
            max_connections=self.settings.max_connections,
        )
        app = build_http_app(
            self.engine, title=f"arbiter {self.name}", routers=self.routers, token=token, fleet=self.fleet
        )
        self._http = AsgiServer(
            app,
            self.settings.host,
            self.settings.http_port,
            reuse_port=self.fleet is not None,
            http=guarded_protocol(limits),
            timeout_keep_alive=self.settings.keep_alive_s,
            **uvicorn_ssl_options(self.settings.tls),
        )
        await self._http.start()
        self.http_port = self._http.port
        if self.settings.grpc_port >= 0:
            handlers = [h for extension in self.extensions for h in extension.grpc_handlers]
            self._grpc, self._health = build_grpc_server(self.engine, token, self.fleet is not None, handlers)
            address = f"{self.settings.host}:{self.settings.grpc_port}"
            if self.settings.tls.enabled:
                self.grpc_port = self._grpc.add_secure_port(
                    address, grpc_server_credentials(self.settings.tls)
                )
            else:
                self.grpc_port = self._grpc.add_insecure_port(address)
            await self._grpc.start()
            await self._health.set("", SERVING)
            await self._health.set(SERVICE_NAME, SERVING)
        log.info("%s serving: http %s  grpc %s", self.name, self.http_url, self.grpc_target or "off")

    async def stop(self) -> None:
        """Graceful: health says NOT_SERVING, in-flight requests finish, then the engine drains."""
        if self._stopped:
            return
        self._stopped = True
        self.engine.release()  # held requests answered before the grace period cuts them
        if self._health is not None:
            await self._health.enter_graceful_shutdown()
            await self._health.set("", NOT_SERVING)
        if self._grpc is not None:
            await self._grpc.stop(grace=5)
        if self._http is not None:
            await self._http.stop()
        for extension in reversed(self.extensions):
            await extension.stop()
        await self.engine.stop()

    async def __aenter__(self) -> GraderServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (the running loop's handlers): what a process owner waits on."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run_until_signalled(
    servers: Sequence[GraderServer], on_started: Callable[[], None] | None = None
) -> None:
    """Start the servers, wait for SIGINT/SIGTERM, stop them all gracefully."""
    stop = stop_on_signals()
    started: list[GraderServer] = []
    try:
        for server in servers:
            await server.start()
            started.append(server)
        if on_started is not None:
            on_started()
        await stop.wait()
    finally:
        for server in reversed(started):
            await server.stop()
