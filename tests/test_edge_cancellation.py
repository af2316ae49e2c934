"""Cancellation at the edge, adversarially: the client watcher of `unless_disconnected` (it cancels
the handler's own task), the batcher's direct start (max_wait_ms 0), and clients that hang up over
real HTTP (uvicorn on loopback; the judge against a real fake upstream).

The watcher orderings run on both event loops (asyncio's and uvloop, the one served in production),
each race set up in one loop iteration by resolving futures in a chosen order: no timing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import httpx
import pytest
import uvloop

from services.common.settings import BatchSettings
from services.judge_proxy.build import build_grader
from services.scoring.batcher import BatcherClosedError, DeadlineExceededError, MicroBatcher
from services.scoring.engine import ScoringEngine
from services.transports.http_app import Message, Receive, build_http_app, unless_disconnected
from services.transports.server import AsgiServer, GraderServer
from tests.helpers import WatchedGrader, server_settings
from tests.judge_proxy.fake_openai import FakeOpenAI
from tests.judge_proxy.judges import judge_settings

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def run_on(loop: str, scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        runner.run(scenario())


async def until(condition: Callable[[], bool], turns: int = 500, pause_s: float = 0.01) -> bool:
    """Poll `condition` (bounded: `turns` pauses at most); whether it came true."""
    for _ in range(turns):
        if condition():
            return True
        await asyncio.sleep(pause_s)
    return condition()


# -- the watcher of unless_disconnected, race by race ---------------------------------------------


class Edge:
    """A request's ASGI receive after its body: only the client's disconnect is left to come (an
    Event, as uvicorn's cycle has, so a cancelled watcher never cancels what the client sets)."""

    def __init__(self) -> None:
        self.left = asyncio.Event()
        self.watched = False

    async def receive(self) -> Message:
        self.watched = True
        await self.left.wait()
        return {"type": "http.disconnect"}


class Handler:
    """A request handler: `work` under unless_disconnected, then a reply whose send waits one
    event (`sent`): a stray cancellation would surface there, or in `cancelling()` afterwards."""

    def __init__(self, edge: Edge, work: Coroutine[Any, Any, int]) -> None:
        self.sent = asyncio.Event()
        self.cancelling_after = -1
        self.task = asyncio.create_task(self._serve(edge.receive, work))

    async def _serve(self, receive: Receive, work: Coroutine[Any, Any, int]) -> int | None:
        answer = await unless_disconnected(receive, work)
        for _ in range(3):
            await asyncio.sleep(0)
        await self.sent.wait()  # the reply's send: nothing may cancel it now
        task = asyncio.current_task()
        assert task is not None
        self.cancelling_after = task.cancelling()
        return answer


async def gated(gate: asyncio.Event, value: int = 7) -> int:
    await gate.wait()
    return value


async def settle(edge: Edge, *ready: Callable[[], bool]) -> None:
    """Let the handler reach its work and the watcher its receive."""
    assert await until(lambda: edge.watched and all(r() for r in ready), turns=100, pause_s=0)


async def finish(handler: Handler) -> None:
    handler.sent.set()
    done, _ = await asyncio.wait({handler.task}, timeout=10)
    assert done, "the handler hung"


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("first", ["work", "client"])
def test_work_done_and_client_gone_in_one_iteration_leave_no_stray_cancel(loop: str, first: str) -> None:
    async def scenario() -> None:
        edge, gate = Edge(), asyncio.Event()
        handler = Handler(edge, gated(gate))
        await settle(edge)
        # One callback: both wake-ups land in the same iteration, in the order they are resolved.
        for event in (gate, edge.left) if first == "work" else (edge.left, gate):
            event.set()
        await finish(handler)
        assert not handler.task.cancelled()
        # The answer, or None (the client left): never an exception, and nothing left to cancel
        # the reply's send.
        assert handler.task.result() in (7, None)
        assert handler.cancelling_after == 0

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_client_that_leaves_after_the_work_returned_cancels_nothing(loop: str) -> None:
    async def scenario() -> None:
        edge, gate = Edge(), asyncio.Event()
        handler = Handler(edge, gated(gate))
        await settle(edge)
        gate.set()
        for _ in range(5):  # the handler is past `await work`, waiting to send its reply
            await asyncio.sleep(0)
        edge.left.set()  # the client goes while the reply is being sent ...
        handler.sent.set()  # ... and the send completes in the same iteration
        await finish(handler)
        assert handler.task.result() == 7 and handler.cancelling_after == 0

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("first", ["timeout", "client"])
def test_a_work_timeout_that_expires_as_the_client_leaves_is_not_a_timeout(loop: str, first: str) -> None:
    """An asyncio.timeout inside the work and the watcher both cancel the handler task: the
    timeout must not take the client's cancellation for its own, nor the reverse."""

    async def scenario() -> None:
        scopes: list[asyncio.Timeout] = []
        gate = asyncio.Event()

        async def work() -> int:
            try:
                async with asyncio.timeout(None) as scope:
                    scopes.append(scope)
                    await gate.wait()
                    return 7
            except TimeoutError:
                return -1  # the work's own deadline: a fallback answer

        edge = Edge()
        handler = Handler(edge, work())
        await settle(edge, lambda: bool(scopes))

        def expire() -> None:  # the work's deadline passes: its timeout fires on the next turn
            scopes[0].reschedule(asyncio.get_running_loop().time() - 1)

        for fire in (expire, edge.left.set) if first == "timeout" else (edge.left.set, expire):
            fire()
        await finish(handler)
        # The client left (None), or the work's own fallback: never a TimeoutError or a
        # CancelledError out of the handler, and no cancellation left pending on its task.
        assert handler.task.result() in (None, -1)
        assert handler.cancelling_after == 0

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_work_timeout_alone_is_the_works_answer(loop: str) -> None:
    async def scenario() -> None:
        edge = Edge()

        async def work() -> int:
            try:
                async with asyncio.timeout(0):
                    await asyncio.Event().wait()
                    return 7
            except TimeoutError:
                return -1

        handler = Handler(edge, work())
        await finish(handler)
        assert handler.task.result() == -1 and handler.cancelling_after == 0

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("race", ["server", "server_then_client", "client_then_server", "in_cleanup"])
def test_a_server_stopping_still_cancels_the_handler(loop: str, race: str) -> None:
    """uvicorn cancels request tasks past its graceful timeout: that cancellation must end the
    handler even when the client leaves in the same iteration (the watcher's cancel is then one of
    two), or while the work cleans up after the client's cancel."""

    async def scenario() -> None:
        gate, cleanup, cleaning = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def work() -> int:
            try:
                await gate.wait()
                return 7
            except asyncio.CancelledError:
                cleaning.set()
                await cleanup.wait()  # e.g. a flight handed over, a connection closed
                raise

        if race != "in_cleanup":
            cleanup.set()  # the cleanup does not wait
        edge = Edge()
        handler = Handler(edge, work())
        await settle(edge)
        loop_ = asyncio.get_running_loop()
        if race == "server":
            handler.task.cancel()
        elif race == "server_then_client":
            handler.task.cancel()
            edge.left.set()
        elif race == "client_then_server":
            edge.left.set()  # the watcher runs first in the next iteration, then the server's cancel
            loop_.call_soon(handler.task.cancel)
        else:
            edge.left.set()
            assert await until(cleaning.is_set, turns=20, pause_s=0)
            handler.task.cancel()  # lands in the work's cleanup
        await finish(handler)
        assert handler.task.cancelled()

    run_on(loop, scenario)


# -- the batcher's direct start (max_wait_ms 0) -----------------------------------------------------


def far() -> float:
    return time.monotonic() + 30


class Held:
    """A batch function whose batches run until released (or cancelled), counting both."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[int]] = []
        self.cancelled = 0
        self.release = asyncio.Event()
        self.fail = fail

    async def __call__(self, items: list[int]) -> list[int]:
        self.calls.append(list(items))
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail:
            raise ValueError("scripted batch failure")
        return [i * 10 for i in items]


async def idle_batcher(
    process: Callable[[list[int]], Awaitable[list[int]]], slots: int
) -> MicroBatcher[int, int]:
    batcher: MicroBatcher[int, int] = MicroBatcher(
        process, BatchSettings(max_batch_size=8, max_wait_ms=0, max_concurrent_batches=slots)
    )
    await batcher.start()
    for _ in range(3):  # the loop takes its slot and waits for work
        await asyncio.sleep(0)
    return batcher


async def test_an_expired_sample_is_not_started_directly() -> None:
    """A sample past its deadline fails with DeadlineExceededError and never reaches the grader,
    as it does through the queue (_take_batch) -- also when it would start in submit."""
    held = Held()
    batcher = await idle_batcher(held, slots=2)
    future = batcher.submit(1, time.monotonic() - 1.0)
    for _ in range(5):
        await asyncio.sleep(0)
    held.release.set()
    done, _ = await asyncio.wait({future}, timeout=5)
    await batcher.stop()
    assert done and isinstance(future.exception(), DeadlineExceededError)
    assert held.calls == []


@pytest.mark.parametrize("outcome", ["abandoned", "failed"])
async def test_a_direct_batch_gives_its_slot_back(outcome: str) -> None:
    """Two slots: the loop's and one for a direct start. A directly started batch that every
    caller abandons (cancelled) or that fails must free its slot: the next sample starts directly
    again, many times over (one leaked slot would queue it)."""
    held = Held(fail=outcome == "failed")
    batcher = await idle_batcher(held, slots=2)
    if outcome == "failed":
        held.release.set()
    for i in range(20):
        future = batcher.submit(i, far())
        assert len(batcher) == 0, f"sample {i} queued: a slot leaked"
        for _ in range(2):
            await asyncio.sleep(0)  # in the grader
        if outcome == "abandoned":
            future.cancel()  # the caller hung up
        else:
            with pytest.raises(ValueError):
                await future
        assert await until(lambda: batcher._free == 1 and batcher._idle, turns=50, pause_s=0)
    await batcher.stop()
    assert held.calls == [[i] for i in range(20)]
    assert held.cancelled == (20 if outcome == "abandoned" else 0)


async def test_one_slot_without_a_wait_never_starts_in_submit_and_still_batches() -> None:
    held = Held()
    batcher = await idle_batcher(held, slots=1)
    futures = [batcher.submit(i, far()) for i in range(5)]
    assert len(batcher) == 5  # the only slot is the loop's: every sample queues
    assert await until(lambda: len(held.calls) == 1, turns=50, pause_s=0)
    more = [batcher.submit(i, far()) for i in range(5, 9)]  # queue behind the running batch
    held.release.set()
    assert await asyncio.gather(*futures, *more) == [i * 10 for i in range(9)]
    await batcher.stop()
    assert held.calls == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]


async def test_stop_drains_directly_started_batches() -> None:
    held = Held()
    batcher = await idle_batcher(held, slots=3)
    futures = [batcher.submit(i, far()) for i in range(2)]
    assert len(batcher) == 0  # both started in submit
    for _ in range(3):
        await asyncio.sleep(0)
    stopping = asyncio.create_task(batcher.stop(drain_timeout_s=10))
    await asyncio.sleep(0)
    with pytest.raises(BatcherClosedError):
        batcher.submit(9, far())
    held.release.set()
    await asyncio.wait_for(stopping, 10)
    assert [f.result() for f in futures] == [0, 10]  # finished, not failed by the stop


class Scripted:
    """Batches that hold for a number of loop turns set by their first item, fail when they hold a
    multiple of 11, and count how many run at once."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, items: list[int]) -> list[int]:
        self.calls.append(list(items))
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            for _ in range(items[0] * 7 % 5):
                await asyncio.sleep(0)
            if any(i % 11 == 0 for i in items):
                raise ValueError("scripted")
            return [i * 10 for i in items]
        finally:
            self.running -= 1


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("slots", [1, 2, 3, 5])
def test_direct_starts_under_load_keep_the_bound_the_order_and_every_slot(loop: str, slots: int) -> None:
    """Seeded churn from many submitting tasks (several woken in one iteration, between batches
    that finish), callers that hang up at once or a turn later, failing batches: at most `slots`
    batches at once, batches start in submission order, every caller that stayed gets its answer,
    and once idle the loop holds one slot and every other is free."""

    async def scenario() -> None:
        rng = random.Random(slots)
        grader = Scripted()
        batcher = await idle_batcher(grader, slots)
        futures: dict[int, asyncio.Future[int]] = {}
        hung_up: set[int] = set()

        async def caller(turns: int, hang_up: float) -> None:
            for _ in range(turns):
                await asyncio.sleep(0)
            i = len(futures)  # the submission order
            futures[i] = future = batcher.submit(i, far())
            if hang_up < 0.1:
                future.cancel()  # hangs up at once, before its batch runs
                hung_up.add(i)
            elif hang_up < 0.2:
                asyncio.get_running_loop().call_soon(future.cancel)  # while it may be running
                hung_up.add(i)

        callers = [asyncio.create_task(caller(rng.randrange(300), rng.random())) for _ in range(600)]
        await asyncio.wait(callers, timeout=10)
        waiting = [f for i, f in futures.items() if i not in hung_up]
        assert len(futures) == 600
        done, _ = await asyncio.wait(waiting, timeout=10)
        assert len(done) == len(waiting), "a caller was never answered"
        for _ in range(10):
            await asyncio.sleep(0)
        assert grader.peak <= slots
        order = [i for batch in grader.calls for i in batch]
        assert order == sorted(set(order)), "a batch started out of order, or an item ran twice"
        for i, future in futures.items():
            if i in hung_up:
                continue
            if future.exception() is None:
                assert future.result() == i * 10
            else:
                assert isinstance(future.exception(), ValueError)
                assert any(i in batch and any(j % 11 == 0 for j in batch) for batch in grader.calls)
        assert grader.running == 0
        assert batcher._idle and batcher._free == slots - 1  # no slot leaked, none made up
        await batcher.stop()
        with pytest.raises(BatcherClosedError):
            batcher.submit(0, far())

    run_on(loop, scenario)


# -- clients that hang up, over real HTTP -----------------------------------------------------------


class HeldUpstream(FakeOpenAI):
    """The fake chat-completions server, holding every call until `release` is set, and counting
    the calls whose client (the judge's upstream session) went away meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.held = 0
        self.left = 0

    async def _answer(
        self, raw: bytes, headers: dict[bytes, bytes], receive: Receive
    ) -> tuple[int, bytes, dict[str, str]]:
        self.held += 1

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watch = asyncio.ensure_future(gone())
        opened = asyncio.ensure_future(self.release.wait())
        try:
            await asyncio.wait({watch, opened}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watch, opened):
                task.cancel()
        if watch.done() and not watch.cancelled():
            self.left += 1
            return 499, b"", {}
        return await super()._answer(raw, headers, receive)


def request_body(path: str, response: str) -> bytes:
    if path == "/v1/score":
        return json.dumps({"samples": [{"prompt": "Q", "response": response}]}).encode()
    return json.dumps({"query": [f"Q{response}"], "prompts": ["Q"], "labels": [""]}).encode()


class Hangup:
    """A client on a raw connection that sends its request and later closes the socket unread."""

    def __init__(self, server: GraderServer) -> None:
        self.server = server
        self.writer: asyncio.StreamWriter | None = None

    async def send(self, path: str, body: bytes) -> None:
        host, port = self.server.http_url.split("//")[1].split(":")
        _, self.writer = await asyncio.open_connection(host, int(port))
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await self.writer.drain()

    def hang_up(self) -> None:
        assert self.writer is not None
        self.writer.close()


def uvicorn_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What uvicorn logged as errors ("Exception in ASGI application": a stray CancelledError)."""
    return [
        r.getMessage() for r in caplog.records if r.name.startswith("uvicorn") and r.levelno >= logging.ERROR
    ]


PATHS = ["/get_reward", "/v1/score"]
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("path", PATHS)
async def test_a_judge_client_that_hangs_up_abandons_the_upstream_call(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    fake = HeldUpstream()
    async with fake:
        settings = judge_settings(fake)
        async with GraderServer("judge_proxy", build_grader(settings), settings) as server:
            engine = server.engine
            slots = settings.batch.max_concurrent_batches
            client = Hangup(server)
            await client.send(path, request_body(path, "gone"))
            assert await until(lambda: fake.held == 1), "the request never reached the upstream"
            client.hang_up()
            assert await until(lambda: fake.left == 1), "the upstream call outlived its client"
            # The batch ended with it: its slot is back, nothing is left in flight.
            assert await until(lambda: engine.batcher._free == slots - 1 and not engine._inflight)
            assert fake.held == 1  # cancelled, not retried
            fake.release.set()
            async with httpx.AsyncClient(base_url=server.http_url) as http:
                reply = await http.post(path, content=request_body(path, "next"), headers=JSON)
            assert reply.status_code == 200
    assert uvicorn_errors(caplog) == []


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("who", ["owner", "joiner"])
async def test_a_judge_sample_shared_with_a_client_that_hangs_up_still_answers_the_other(
    path: str, who: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two clients, one identical sample, one upstream call: whichever of them hangs up (the one
    whose request submitted the sample and started its batch, or the one that joined it), the
    other gets the judge's verdict from that same call."""
    caplog.set_level(logging.INFO)
    fake = HeldUpstream()
    async with fake:
        settings = judge_settings(fake)
        async with (
            GraderServer("judge_proxy", build_grader(settings), settings) as server,
            httpx.AsyncClient(base_url=server.http_url, timeout=30) as http,
        ):
            engine = server.engine
            body = request_body(path, "shared")
            client = Hangup(server)

            def waiters() -> list[int]:
                return [flight.waiters for flight in engine._inflight.values()]

            if who == "owner":
                await client.send(path, body)
                assert await until(lambda: fake.held == 1)
                stays = asyncio.create_task(http.post(path, content=body, headers=JSON))
            else:
                stays = asyncio.create_task(http.post(path, content=body, headers=JSON))
                assert await until(lambda: fake.held == 1)
                await client.send(path, body)
            assert await until(lambda: waiters() == [2]), "the second request never joined the flight"
            client.hang_up()
            assert await until(lambda: waiters() == [1]), "the client that hung up never left the flight"
            fake.release.set()
            reply = await asyncio.wait_for(stays, 30)
    assert reply.status_code == 200
    data = reply.json()
    if path == "/v1/score":
        assert data["results"][0]["status"] == "OK" and data["results"][0]["logs"]["judge/score"] == 7.0
    else:
        assert data["extra_logs"]["status/ok"] == [1.0] and data["extra_logs"]["judge/score"] == [7.0]
    assert fake.held == 1 and fake.left == 0  # one upstream call, kept for the client that stayed
    assert uvicorn_errors(caplog) == []


async def test_a_server_stopping_past_its_grace_cancels_handlers_in_flight() -> None:
    """Past timeout_graceful_shutdown uvicorn cancels the request tasks: the handlers end (their
    samples' work cancelled) with uvicorn's 500, not with the 499 of a client that hung up."""
    grader = WatchedGrader()
    engine = ScoringEngine(grader, server_settings(deadline_s=60, batch={"max_batch_size": 1}))
    await engine.start()
    http = AsgiServer(build_http_app(engine), timeout_graceful_shutdown=0.3)
    await http.start()
    replies: list[bytes] = []
    try:
        streams = []
        for path in PATHS:
            reader, writer = await asyncio.open_connection("127.0.0.1", http.port)
            body = request_body(path, "hang")
            head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
            streams.append((reader, writer))
        assert await until(lambda: len(engine._inflight) == 2), "the requests never reached the grader"
        await asyncio.wait_for(http.stop(), 20)
        for reader, writer in streams:
            replies.append(await asyncio.wait_for(reader.read(), 10))
            writer.close()
        assert await until(lambda: grader.cancelled == 2)
        assert not engine._inflight
    finally:
        await engine.stop()
    for reply in replies:
        assert reply.startswith(b"HTTP/1.1 500 "), reply[:60]
