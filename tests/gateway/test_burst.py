"""OpenRLHF's burst: 1,024 prompts x 16 samples, all POSTed at once to the gateway, one per request."""

from __future__ import annotations

import asyncio
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from testkit.procs import rss_mib
from tests.helpers import ServiceProcess, free_port

PROMPTS, SAMPLES = 1024, 16
CONFIG = """
gateway:
  routes:
    - {datasource: "gsm8k", recipe: math}
    - {recipe: format}
  recipes:
    math:
      components:
        correct: {grader: math}
        format: {grader: format, value: score}
      formula: "0.9*correct + 0.1*format"
      score: correct
    format:
      components:
        format: {grader: format}
"""


@pytest.fixture
def gateway_process(tmp_path: Path) -> Iterator[tuple[str, int]]:
    config = tmp_path / "arbiter.yaml"
    config.write_text(CONFIG)
    port = free_port()
    env = {
        **os.environ,
        "ARBITER_CONFIG": str(config),
        "ARBITER_GATEWAY__HTTP_PORT": str(port),
        "ARBITER_GATEWAY__GRPC_PORT": "-1",
        "ARBITER_LOG__LEVEL": "WARNING",
    }
    url = f"http://127.0.0.1:{port}"
    with ServiceProcess([sys.executable, "-m", "services.gateway"], f"{url}/readyz", env=env) as gateway:
        yield url, gateway.pid


def body(p: int, s: int) -> tuple[dict[str, list[str]], float]:
    """One rollout sample and the reward it should get."""
    prompt = f"<|im_start|>user\nProblem {p}: what is {p} + {s % 4}?<|im_end|>\n<|im_start|>assistant\n"
    right = s % 2 == 0
    answer = p + s % 4 if right else p + s % 4 + 1
    if p % 2:  # math route
        response = (
            f"<think>Let me add. Wait, check: fine.</think> The answer is \\boxed{{{answer}}}<|im_end|>"
        )
        label = f'{{"datasource": "gsm8k", "answer": "{p + s % 4}"}}'
        expected = 1.0 if right else 0.1
    else:  # format route
        response = f"<think>think {s}</think> {answer}<|im_end|>" if right else f"{answer}<|im_end|>"
        label = ""
        expected = 1.0 if right else 0.0
    return {"query": [prompt + response], "prompts": [prompt], "labels": [label]}, expected


async def burst(url: str) -> list[tuple[int, dict[str, object] | None, float]]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, force_close=True)  # a new connection per POST, as OpenRLHF
    timeout = aiohttp.ClientTimeout(total=180)  # OpenRLHF's client timeout
    start = asyncio.Event()

    async def one(
        session: aiohttp.ClientSession, p: int, s: int
    ) -> tuple[int, dict[str, object] | None, float]:
        payload, expected = body(p, s)
        await start.wait()
        for _ in range(5):  # OpenRLHF's retry loop: 5 attempts, 1 s apart
            try:
                async with session.post(f"{url}/get_reward", json=payload) as reply:
                    return reply.status, await reply.json(), expected
            except aiohttp.ClientError:
                await asyncio.sleep(1)
        return 0, None, expected

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks = [asyncio.create_task(one(session, p, s)) for p in range(PROMPTS) for s in range(SAMPLES)]
        await asyncio.sleep(0.1)
        start.set()
        return await asyncio.gather(*tasks)


@pytest.mark.timeout(600)
def test_16k_concurrent_samples_all_answered_and_memory_bounded(gateway_process: tuple[str, int]) -> None:
    url, pid = gateway_process
    before = rss_mib(pid)
    peaks = []
    for _ in range(2):
        replies = asyncio.run(burst(url))
        assert len(replies) == PROMPTS * SAMPLES
        lost = [r for r in replies if r[0] != 200]
        assert not lost, f"{len(lost)} samples without a reward, e.g. {lost[:3]}"
        for _, data, expected in replies:
            assert data is not None
            rewards = data["rewards"]
            assert isinstance(rewards, list) and len(rewards) == 1 and math.isfinite(rewards[0])
            assert rewards[0] == pytest.approx(expected), data
        peaks.append(rss_mib(pid))
    stats = httpx.get(f"{url}/v1/stats", timeout=10).json()
    assert stats["samples_seen"] >= PROMPTS * SAMPLES  # the second round may come from the cache
    assert stats["statuses"] == {"OK": stats["window"]}
    # Bounded: the second burst does not grow the process (no per-request leak), and the whole
    # service stays far below the machine's memory.
    assert peaks[1] < peaks[0] * 1.25 + 64, (before, peaks)
    assert peaks[1] < 3000, (before, peaks)
