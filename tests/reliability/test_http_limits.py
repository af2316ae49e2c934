"""What one HTTP client may hold.

A 64 MiB header used to cost seconds of parsing before auth ran, and sockets that never
finished their headers or their body were held forever (until the fd limit refused
everyone). Now headers are bounded in size and time, bodies in time, and `/healthz`
answers throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from services.scoring.grader import Grader
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings


@contextlib.asynccontextmanager
async def served(grader: Grader | None = None, **limits: object) -> AsyncIterator[GraderServer]:
    settings = server_settings(grpc_port=-1, **limits)
    server = GraderServer("rules", grader or rules_grader(), settings)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What the server sent before it closed the connection (raises TimeoutError if it did not)."""
    return await asyncio.wait_for(reader.read(), seconds)


async def test_a_huge_header_is_refused_before_it_is_read() -> None:
    async with served() as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(b"POST /get_reward HTTP/1.1\r\nhost: x\r\nx-junk: ")
        sent = 0
        refused = False
        with contextlib.suppress(ConnectionError):
            while sent < 64 * 1024 * 1024:
                writer.write(b"a" * 65536)
                await writer.drain()
                sent += 65536
                if reader.at_eof() or writer.is_closing():
                    break
                with contextlib.suppress(TimeoutError):
                    if await asyncio.wait_for(reader.read(64), 0.001):
                        refused = True
                        break
        reply = b"" if refused else await closed_within(reader, 5)
        writer.close()
        assert refused or reply.startswith(b"HTTP/1.1 431")
        assert sent < 8 * 1024 * 1024  # refused after the first few chunks, not after 64 MiB


async def test_unfinished_headers_and_bodies_are_dropped_and_health_still_answers() -> None:
    async with served(idle_timeout_s=0.5, header_timeout_s=0.5, body_timeout_s=0.5) as server:
        port = server.http_port
        trickle_reader, trickle = await asyncio.open_connection("127.0.0.1", port)
        trickle.write(b"POST /get_reward HTTP/1.1\r\nhost: x\r\n")  # never finishes its headers
        half_reader, half = await asyncio.open_connection("127.0.0.1", port)
        half.write(b'POST /get_reward HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{"query"')
        silent_reader, silent = await asyncio.open_connection("127.0.0.1", port)  # sends nothing
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{server.http_url}/healthz")).status_code == 200
        assert (await closed_within(trickle_reader, 5)).startswith(b"HTTP/1.1 408")
        assert (await closed_within(silent_reader, 5)).startswith(b"HTTP/1.1 408")
        await closed_within(half_reader, 5)  # the app saw the client go; the socket is closed
        for writer in (trickle, half, silent):
            writer.close()


async def test_ordinary_requests_on_a_kept_alive_connection_still_work() -> None:
    body = {"query": ["<think>a</think> b"], "prompts": [""]}
    async with served(header_timeout_s=0.5, body_timeout_s=0.5) as server, httpx.AsyncClient() as http:
        for _ in range(3):
            assert (await http.post(f"{server.http_url}/get_reward", json=body)).status_code == 200
            await asyncio.sleep(0.7)  # longer than the header timeout: idle time is not header time


async def test_connections_beyond_the_cap_are_closed_at_once() -> None:
    async with served(max_connections=4) as server:
        held = [await asyncio.open_connection("127.0.0.1", server.http_port) for _ in range(4)]
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        assert (await closed_within(reader, 5)).startswith(b"HTTP/1.1 503")
        writer.close()
        for _, held_writer in held:
            held_writer.close()


async def test_a_client_that_connects_early_and_writes_late_is_served() -> None:
    """In a burst of thousands a client's loop connects long before it writes: the header clock
    starts at the first byte, not at the connection."""
    async with served(idle_timeout_s=5, header_timeout_s=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        await asyncio.sleep(0.6)  # longer than the header timeout, well inside the idle one
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert (await closed_within(reader, 5)).startswith(b"HTTP/1.1 200")
        writer.close()


async def test_the_rest_of_a_refused_body_is_not_read_as_the_next_requests_headers() -> None:
    """A body over the limit is answered 413 at once; what the client then sends of it is body,
    not the headers of a next request on the same connection (it used to count toward 431)."""
    async with served(max_body_bytes=1024) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        size = 200_000
        writer.write(f"POST /get_reward HTTP/1.1\r\nhost: x\r\ncontent-length: {size}\r\n\r\n".encode())
        first = await asyncio.wait_for(reader.readuntil(b"}"), 5)  # the 413's JSON body ends in }
        assert first.startswith(b"HTTP/1.1 413")
        writer.write(b"x" * size)  # the client sends its body anyway, as simple clients do
        await writer.drain()
        await asyncio.sleep(0.3)
        body = b'{"query": ["a"], "prompts": [""]}'
        writer.write(
            b"POST /get_reward HTTP/1.1\r\nhost: x\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        rest = await closed_within(reader, 5)
        writer.close()
        assert b"431" not in rest, rest[:200]


# A server in a process of its own, on the loop named by argv[1], printing its HTTP port.
_SERVE_ALONE = """
import asyncio, sys
from services.scoring.grader import Grader
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings

async def main() -> None:
    limits = dict(keep_alive_s=0.3, idle_timeout_s=0.3, header_timeout_s=0.3, body_timeout_s=0.3)
    server = GraderServer("rules", rules_grader(), server_settings(grpc_port=-1, **limits))
    await server.start()
    print(server.http_port, flush=True)
    await asyncio.Event().wait()

if sys.argv[1] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""


@contextlib.contextmanager
def served_alone(loop_kind: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """(the server's process, its HTTP port): a process the test can stop and continue."""
    argv = [sys.executable, "-c", _SERVE_ALONE, loop_kind]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=Path(__file__).parents[2])
    try:
        assert proc.stdout is not None
        yield proc, int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def stopped(proc: subprocess.Popen[bytes], seconds: float) -> Iterator[None]:
    """The process is stopped (SIGSTOP) for the block and `seconds` after, then continued."""
    proc.send_signal(signal.SIGSTOP)
    try:
        yield
        time.sleep(seconds)
    finally:
        proc.send_signal(signal.SIGCONT)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_request_sent_while_the_server_was_stopped_past_keep_alive_is_answered(loop_kind: str) -> None:
    """A process stopped (starved of CPU, a paused VM) past a kept-alive connection's timer wakes
    with the client's next request already in its socket, and both loops run due timers before
    they read it: closing then, with unread data, reset the connection, and the client saw
    ECONNRESET for a request it sent on time (a CI run of tests/gateway/test_faults.py)."""
    body = {"query": ["<think>a</think> b"], "prompts": [""]}
    with (
        served_alone(loop_kind) as (proc, port),
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http,
        ThreadPoolExecutor(1) as pool,
    ):
        for _ in range(3):
            assert http.post("/get_reward", json=body).status_code == 200  # the connection is kept
            with stopped(proc, 1.0):  # past the keep-alive timer
                reply = pool.submit(http.post, "/get_reward", json=body)
            assert reply.result(30).status_code == 200
