"""Red-team of the HTTP edge's timers (services/transports/httpguard.py): the expiry grace, the
keep-alive timer, and the bounds a hostile, pipelining or stalled client must still meet.

The first three tests failed before the guard knew about early answers and pipelining.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from typing import Any

import pytest

from services.transports.server import GraderServer
from tests.helpers import ScriptedGrader, rules_grader, server_settings
from tests.reliability.test_http_limits import closed_within, served, served_alone, stopped

SHORT: dict[str, Any] = {
    "keep_alive_s": 0.3,
    "idle_timeout_s": 0.3,
    "header_timeout_s": 0.3,
    "body_timeout_s": 0.3,
}
BODY = b'{"query": ["<think>a</think> b"], "prompts": [""]}'
HEAD = (
    b"POST /get_reward HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(BODY)}\r\n\r\n".encode()
)


# --- holes found, closed --------------------------------------------------------------------------


async def test_a_connection_answered_before_its_body_is_still_bounded_once_the_body_is_in() -> None:
    """An early answer (404 here; 401 or 413 alike) came before the body; the body then cancelled
    uvicorn's keep-alive timer, which only a response arms, and the body clock was disarmed: no
    timer was left, and the connection was held for ever, whatever the bounds said."""
    async with served(**SHORT) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(b"POST /nowhere HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 404")
        writer.write(b"0123456789")  # the body, in time; then the client just sits there
        await writer.drain()
        try:
            await closed_within(reader, 2.5)  # every bound is 0.3 s
        except TimeoutError:
            pytest.fail("a connection answered early and then sent its body is never closed")
        finally:
            writer.close()


async def test_a_pipelined_request_whose_body_the_server_did_not_read_does_not_kill_the_first() -> None:
    """uvicorn pauses reading once a pipelined request's headers are in, so its body waits in the
    socket while the first request is in the app: its body clock must not run meanwhile (it did,
    and the guard closed the connection: the first answer was lost to a reset, though the client
    sent everything in time)."""
    async with served(ScriptedGrader(batch_delay_s=1.0), **SHORT) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(HEAD + BODY)  # the first request: 1 s in the app
        await asyncio.sleep(0.1)
        writer.write(HEAD)  # a second, pipelined
        await asyncio.sleep(0.05)
        writer.write(BODY)  # its body, well inside body_timeout_s
        await writer.drain()
        try:
            replies = await closed_within(reader, 10)
        except ConnectionResetError:
            replies = b"<reset>"
        finally:
            writer.close()
        assert replies.count(b"HTTP/1.1 200") == 2, replies[:300]


async def test_a_pipelined_request_stuck_in_its_headers_does_not_corrupt_the_answer_before_it() -> None:
    """A pipelined request whose headers never finish is refused, but only once the answer before
    it is out: a 408 written meanwhile would have landed inside that answer."""
    async with served(ScriptedGrader(batch_delay_s=1.0), **SHORT) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(HEAD + BODY)  # the first request: 1 s in the app
        await asyncio.sleep(0.1)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # a second, never finished
        await writer.drain()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            body = await asyncio.wait_for(reader.readexactly(length), 10)
            rest = await closed_within(reader, 10)
        finally:
            writer.close()
        assert head.startswith(b"HTTP/1.1 200")
        assert body.startswith(b"{") and body.endswith(b"}"), body[-50:]  # the whole answer, intact
        assert rest == b"" or rest.startswith(b"HTTP/1.1 408"), rest[:100]


# --- properties ----------------------------------------------------------------------------------


async def test_a_header_trickle_is_refused_near_its_bound_despite_the_grace() -> None:
    """A byte every 5 ms (inside the 10 ms grace, again and again) buys no time on the header clock."""
    async with served(**SHORT) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        refused = b""
        with contextlib.suppress(ConnectionError):
            for _ in range(1000):  # 5 s of trickle at most
                writer.write(b"x")
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    refused = await asyncio.wait_for(reader.read(), 0.005)
                    break
        writer.close()
        assert refused.startswith(b"HTTP/1.1 408"), refused[:100]


async def test_a_body_trickle_is_closed_near_its_bound_despite_the_grace() -> None:
    async with served(**SHORT) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(b"POST /get_reward HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n")
        closed = False
        with contextlib.suppress(ConnectionError):
            for _ in range(1000):  # 5 s of trickle at most
                writer.write(b"x")
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reader.read(), 0.005)
                    closed = True
                    break
        closed = closed or reader.at_eof() or writer.is_closing()
        writer.close()
        assert closed


async def test_idle_kept_alive_connections_do_not_hold_up_shutdown() -> None:
    """keep_alive_s is 75 s by default now: stop() must still close idle kept-alive sockets at once."""
    server = GraderServer("rules", rules_grader(), server_settings(grpc_port=-1))
    assert server.settings.keep_alive_s >= 60
    await server.start()
    conns = []
    try:
        for _ in range(50):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
            writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            conns.append((reader, writer))
    finally:
        await asyncio.wait_for(server.stop(), 30)  # not keep_alive_s (75)
    for reader, writer in conns:
        await closed_within(reader, 5)
        writer.close()


async def test_resets_around_the_timers_log_no_error(caplog: pytest.LogCaptureFixture) -> None:
    """Clients that reset at every stage (idle, mid-headers, mid-body, kept alive, around the
    grace) leave no exception in the loop's handler or the logs."""
    errors: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    linger = struct.pack("ii", 1, 0)  # close sends RST
    stages = [b"", b"GET /hea", HEAD + BODY[:5], b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n"]
    with caplog.at_level(logging.WARNING):
        async with served(**SHORT) as server:
            for delay in (0.0, 0.305, 0.315):
                for data in stages:
                    _, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
                    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    writer.write(data)
                    await asyncio.sleep(delay)
                    writer.transport.abort()
            await asyncio.sleep(0.5)  # every timer left has fired
    loop.set_exception_handler(None)
    assert not errors
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_stall_past_the_idle_header_and_body_timers_spares_bytes_sent_in_time(loop_kind: str) -> None:
    """Like keep-alive: a process stopped past the idle, header or body timer, with the client's
    bytes in its socket, serves the request instead of answering 408 or closing. (Without the
    grace, the idle case got 408 on both loops in a scratch run; header and body passed anyway.)"""
    with served_alone(loop_kind) as (proc, port):
        for first, rest in [
            (b"", HEAD + BODY),  # idle timer
            (HEAD[:20], HEAD[20:] + BODY),  # header timer
            (HEAD, BODY),  # body timer
        ]:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(first)
                time.sleep(0.05)
                with stopped(proc, 0.6):  # past every 0.3 s bound
                    sock.sendall(rest)
                reply = sock.recv(65536)
                assert reply.startswith(b"HTTP/1.1 200"), (first[:20], reply[:100])


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_an_idle_kept_alive_connection_is_still_closed(loop_kind: str) -> None:
    """The keep-alive grace defers the close, it does not cancel it (both loops)."""
    with (
        served_alone(loop_kind) as (_proc, port),
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):  # until the server closes it (keep_alive_s 0.3), or a timeout
            received += chunk
        assert received.startswith(b"HTTP/1.1 200") and received.endswith(b'{"status":"ok"}')
