"""Bounds on what an HTTP client can hold before its request reaches the app.

uvicorn's httptools protocol has no limit on header size, no deadline for headers or for a
half-sent body, and arms its keep-alive timer only after a response: a 64 MiB header costs
seconds of parsing before auth runs, and sockets that trickle a byte now and then are held
forever, until the process runs out of file descriptors and refuses everyone (the code
grader then cannot open its pipes either). This protocol adds, per connection:

- headers: refused with 431 once more than `max_header_bytes` arrived without completing them;
- headers: the connection is closed (408) when they are not complete `header_timeout_s` after
  the request's first byte; a new connection that sends no byte at all goes after `idle_timeout_s`
  (a client in a burst of thousands may connect well before its loop gets to write);
- body: the connection is closed when the body is not complete `body_timeout_s` after the
  headers (the app then sees the client disconnect);
- connections: beyond `max_connections` open at once a new one is closed at once, so the
  service keeps file descriptors for its own work.

Idle kept-alive connections are closed by uvicorn's own `timeout_keep_alive`, a connection
answered before its body was in too, once that body is in. A clock runs only while the client is
the one holding things up: it starts again while the server does not read (a pipelined request
waits its turn, a large body waits for the app) or still answers an earlier request on the same
connection (a 408 then would land inside that answer).

Every one of these timers, uvicorn's keep-alive included, acts only after the loop has polled
for I/O once more (`EXPIRY_GRACE_S`). A process stopped for longer than a timer (starved of
CPU, a paused VM) wakes with the timer due and the client's bytes unread in the socket, and
both asyncio and uvloop then run the timer first. For keep-alive that closed a connection whose
next request had come in time: a close with unread data resets it, and the client saw
ECONNRESET (tests/reliability/test_http_limits.py reproduces it with SIGSTOP). The header and
body clocks get the same grace, so bytes that came in time count before they are judged late.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# How long an expired timer waits before it acts: long enough for one more I/O poll (uvloop runs
# a zero-delay timer before it polls), short enough to be no one's wait.
EXPIRY_GRACE_S = 0.01

# File descriptors left for the service's own work (pipes, worker processes, upstream sockets,
# Redis) when the connection cap is derived from RLIMIT_NOFILE.
FD_RESERVE = 512


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_header_bytes: int = 64 * 1024
    idle_timeout_s: float = 60.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int = 0  # 0: the soft RLIMIT_NOFILE less FD_RESERVE

    def connection_cap(self) -> int:
        if self.max_connections > 0:
            return self.max_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 1 << 20
        return max(64, soft - FD_RESERVE)


def _status(code: int, reason: str) -> bytes:
    body = reason.encode("ascii")
    return (
        f"HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode("ascii") + body


class _GuardedProtocol(HttpToolsProtocol):
    limits: ClassVar[HttpLimits]
    cap: ClassVar[int]

    _timer: asyncio.TimerHandle | None = None
    _state = "idle"  # idle (no byte of a request yet) -> headers -> body -> app -> idle
    _header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.cap:
            self.transport.write(_status(503, "Too many connections"))
            self.transport.close()
            return
        # A client in a burst may connect long before it writes (its own loop is busy): the header
        # clock starts at its first byte; a connection that never sends one goes after idle_timeout_s.
        self._arm(self.limits.idle_timeout_s, 408, "No request")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        # uvicorn cancels its keep-alive timer only on a clean close: after a reset the timer
        # would hold this protocol for keep_alive_s.
        self._unset_keepalive_if_required()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # the parser calls on_message_begin at a request's first byte
        if self._state == "headers" and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.limits.max_header_bytes:
                self._refuse(431, "Request Header Fields Too Large")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._state = "headers"
        self._header_bytes = 0
        self._arm(self.limits.header_timeout_s, 408, "Request header timeout")

    def on_headers_complete(self) -> None:
        self._state = "body"
        self._arm(self.limits.body_timeout_s, 408, "Request body timeout")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        answered = self.cycle is not None and self.cycle.response_complete
        self._disarm()
        super().on_message_complete()
        if answered:
            # Answered before its body was in (401, 413, 404): the body that came since cancelled
            # uvicorn's keep-alive timer, which only a response arms. The connection is idle now
            # and bounded as one, else it was held for ever.
            self._state = "idle"
            if not self.pipeline and not self.transport.is_closing():
                self._unset_keepalive_if_required()
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self.timeout_keep_alive_handler
                )
        else:
            self._state = "app"

    def on_response_complete(self) -> None:
        if self._state == "app":  # else answered before its body was in: the body clock still runs
            self._state = "idle"  # uvicorn's keep-alive timer bounds the wait for the next request
        super().on_response_complete()

    def timeout_keep_alive_handler(self) -> None:
        # Not yet: a request that came in while the loop was stalled is read first (it cancels this).
        close = super().timeout_keep_alive_handler
        self.timeout_keep_alive_task = self.loop.call_later(EXPIRY_GRACE_S, close)

    def _arm(self, delay: float, code: int, reason: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(delay, self._expire, delay, code, reason)

    def _expire(self, delay: float, code: int, reason: str) -> None:
        if self.flow.read_paused or self._answering():
            # Not the client's doing: the server does not read (a pipelined request waits for the
            # one before it; a large body waits for the app) or still answers an earlier request
            # on this connection (a 408 written now would land inside that answer). The clock
            # starts again.
            self._timer = self.loop.call_later(delay, self._expire, delay, code, reason)
            return
        # Not yet: bytes that arrived while the loop was stalled are read first (they re-arm or
        # disarm this timer); a client still short of its bound then is refused.
        self._timer = self.loop.call_later(EXPIRY_GRACE_S, self._refuse, code, reason)

    def _answering(self) -> bool:
        """An earlier request's answer is still being made, while this connection waits for the
        next request's first byte or headers (pipelined)."""
        cycle = self.cycle
        return self._state in ("idle", "headers") and cycle is not None and not cycle.response_complete

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _refuse(self, code: int, reason: str) -> None:
        self._disarm()
        if self.transport.is_closing():
            return
        if self._state in ("idle", "headers"):
            self.transport.write(_status(code, reason))  # no request in the app: say why
        self.transport.close()


def guarded_protocol(limits: HttpLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with `limits` (pass it as uvicorn's `http` option)."""
    return type(
        "GuardedHttpToolsProtocol", (_GuardedProtocol,), {"limits": limits, "cap": limits.connection_cap()}
    )
