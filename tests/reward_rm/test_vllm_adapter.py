"""The vLLM backend against a small real HTTP server speaking vLLM's pooling API.

The real vLLM CPU server is in test_vllm_server.py (slow tier); here the adapter's own
behaviour: token ids over the wire, no activation, order, normalization on either side,
one pooled set of connections carrying concurrent requests, failures as UPSTREAM_ERROR.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, Literal

import pytest

from arbiter.contract import Sample, Status
from services.reward_rm.backends.vllm_backend import VLLMBackend
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings, VLLMSettings
from testkit.tiny_checkpoints import TinyCheckpoints, sentence
from tests.reward_rm.fake_vllm import FakeVLLM
from tests.reward_rm.reference import Reference
from tests.reward_rm.test_equivalence import mixed_samples


@pytest.fixture(scope="module")
def reference(tiny: TinyCheckpoints) -> Reference:
    return Reference(tiny.openrlhf)  # the raw head value: the fake server normalizes like vLLM


async def scored(settings: RMServiceSettings, samples: list[Sample]) -> list[Any]:
    grader = RMGrader(settings)
    try:
        await grader.start()
        return await grader.score(samples)
    finally:
        await grader.aclose()


@pytest.mark.parametrize("endpoint", ["classify", "pooling"])
@pytest.mark.parametrize("server_normalizes", [True, False])
async def test_same_rewards_as_the_transformers_backend(
    tiny: TinyCheckpoints,
    reference: Reference,
    endpoint: Literal["classify", "pooling"],
    server_normalizes: bool,
) -> None:
    samples = mixed_samples(10, seed=11)
    local = await scored(RMServiceSettings(checkpoint=str(tiny.openrlhf)), samples)
    mean, sigma = (tiny.mean, tiny.std) if server_normalizes else (None, None)
    async with FakeVLLM(reference, logit_mean=mean, logit_sigma=sigma) as fake:
        vllm = VLLMSettings(
            url=fake.url, model="rm", endpoint=endpoint, request_size=3, server_normalizes=server_normalizes
        )
        remote = await scored(
            RMServiceSettings(checkpoint=str(tiny.openrlhf), backend="vllm", vllm=vllm), samples
        )
    for a, b in zip(local, remote, strict=True):
        assert b.status is Status.OK
        assert abs(a.reward - b.reward) < 1e-5
        assert abs(a.logs["rm/raw_reward"] - b.logs["rm/raw_reward"]) < 1e-5
        assert a.logs["rm/tokens"] == b.logs["rm/tokens"]
    assert len(fake.bodies) == 4  # 10 samples, 3 per request
    for body in fake.bodies:
        assert body["use_activation"] is False and body["model"] == "rm"
        assert all(isinstance(i, int) for ids in body["input"] for i in ids)
        assert body.get("task") == ("classify" if endpoint == "pooling" else None)


async def test_requests_run_concurrently_over_one_connection_pool(
    tiny: TinyCheckpoints, reference: Reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake runs its forwards on this test's own loop: under load it can hold the loop longer
    # than the 2 s idle expiry, and a fresh connection would then be right. Pool reuse is the point.
    monkeypatch.setattr("services.reward_rm.backends.vllm_backend.UPSTREAM_KEEPALIVE_S", 60.0)
    rng = random.Random(5)
    samples = [Sample(prompt="q", response=sentence(rng, rng.randint(1, 20))) for _ in range(48)]
    async with FakeVLLM(reference, latency_s=0.05) as fake:
        vllm = VLLMSettings(url=fake.url, request_size=2, max_connections=4)
        settings = RMServiceSettings(checkpoint=str(tiny.openrlhf), backend="vllm", vllm=vllm)
        grader = RMGrader(settings)
        try:
            for _ in range(2):
                results = await grader.score(samples)
                assert all(r.status is Status.OK for r in results)
        finally:
            await grader.aclose()
    assert len(fake.bodies) == 48
    assert 1 < fake.peak_inflight <= 4
    assert len(fake.clients) <= 4  # keep-alive: 48 requests, at most 4 connections


async def test_server_failures_are_upstream_errors(tiny: TinyCheckpoints, reference: Reference) -> None:
    samples = [Sample(prompt="q", response="a"), Sample(prompt="q", response="b")]
    async with FakeVLLM(reference) as fake:
        fake.fail_with = 500
        url = fake.url
        results = await scored(
            RMServiceSettings(checkpoint=str(tiny.openrlhf), backend="vllm", vllm=VLLMSettings(url=url)),
            samples,
        )
        assert [r.status for r in results] == [Status.UPSTREAM_ERROR] * 2
        assert "answered 500" in results[0].detail and "engine dead" in results[0].detail
    # The server is gone now: nothing listens on that port.
    results = await scored(
        RMServiceSettings(checkpoint=str(tiny.openrlhf), backend="vllm", vllm=VLLMSettings(url=url)), samples
    )
    assert [r.status for r in results] == [Status.UPSTREAM_ERROR] * 2
    assert "unreachable" in results[0].detail


class _ClosesReusedConnections:
    """A raw HTTP/1.1 server answering vLLM's /classify (one value per input, its length) that
    closes a kept-alive connection when a second request comes on it, unanswered: the server
    closing an idle connection just as the client sends on it, made deterministic."""

    def __init__(self) -> None:
        self.connections = 0
        self.dropped = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if served:
                    self.dropped += 1
                    return  # closed with the request unread: the client sees a broken connection
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                inputs = json.loads(await reader.readexactly(length))["input"]
                data = [{"index": i, "probs": [float(len(ids))]} for i, ids in enumerate(inputs)]
                body = json.dumps({"data": data}).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                served += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_a_kept_alive_connection_the_server_closed_is_retried_on_a_fresh_one() -> None:
    """The server may close an idle connection just as a request goes out on it: that request is
    sent once more on a fresh connection, not failed (its batch would get fallback rewards)."""
    async with _ClosesReusedConnections() as url:
        backend = VLLMBackend(VLLMSettings(url=url, max_connections=1), normalized=False)
        try:
            assert await backend.rewards([[1, 2, 3]]) == [3.0]
            assert await backend.rewards([[1, 2], [5]]) == [2.0, 1.0]  # the kept connection breaks
        finally:
            await backend.aclose()
