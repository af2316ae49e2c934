"""OpenRLHF's load shape: thousands of simultaneous one-sample POSTs, none lost, batched."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers import ServiceProcess, free_port

CONCURRENT = 2000


@pytest.fixture
def served_rules() -> Iterator[str]:
    """`python -m services.reward_rules` in its own process, as a deployment runs it."""
    port = free_port()
    env = {
        **os.environ,
        "ARBITER_REWARD_RULES__HTTP_PORT": str(port),
        "ARBITER_REWARD_RULES__GRPC_PORT": "0",
        "ARBITER_REWARD_RULES__BATCH__MAX_WAIT_MS": "5",
    }
    url = f"http://127.0.0.1:{port}"
    server = ServiceProcess([sys.executable, "-m", "services.reward_rules"], f"{url}/readyz", env=env)
    with server:
        yield url
    assert server.proc is not None and server.proc.returncode == 0, (
        "server did not shut down cleanly on SIGTERM"
    )


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.MULTILINE)
    assert match, f"{name} not in metrics"
    return float(match.group(1))


async def test_2000_concurrent_single_sample_requests(served_rules: str) -> None:
    prompt = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"
    limits = httpx.Limits(max_connections=CONCURRENT, max_keepalive_connections=0)
    timeout = httpx.Timeout(180.0)  # OpenRLHF's own client timeout
    start = asyncio.Event()

    async def one(client: httpx.AsyncClient, i: int) -> tuple[int, dict[str, object]]:
        await start.wait()
        response = f"<think>step {i}</think> answer {i}<|im_end|>" if i % 2 else f"answer {i}"
        body = {"query": [prompt + response], "prompts": [prompt], "labels": [""]}
        reply = await client.post("/get_reward", json=body)
        return reply.status_code, reply.json()

    async with httpx.AsyncClient(base_url=served_rules, limits=limits, timeout=timeout) as client:
        tasks = [asyncio.create_task(one(client, i)) for i in range(CONCURRENT)]
        start.set()
        replies = await asyncio.gather(*tasks)
        metrics = (await client.get("/metrics")).text

    assert [code for code, _ in replies] == [200] * CONCURRENT
    rewards = [data["rewards"] for _, data in replies]
    assert rewards == [[1.0] if i % 2 else [0.0] for i in range(CONCURRENT)]  # each got its own answer
    assert _metric(metrics, 'arbiter_samples_total{status="OK"}') == CONCURRENT
    batches = _metric(metrics, "arbiter_batch_size_count")
    samples = _metric(metrics, "arbiter_batch_size_sum")
    assert samples == CONCURRENT
    assert batches < CONCURRENT, "the micro-batcher never formed a batch larger than 1"
    assert _metric(metrics, 'arbiter_batch_size_bucket{le="1.0"}') < batches
