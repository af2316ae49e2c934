"""OpenRLHF's remote-reward client, reproduced: what benchmarks and load tests drive servers with.

Like openrlhf.utils.agent (0.11): one sample per POST, a new aiohttp session per attempt (no
keep-alive), a 180 s total timeout, 5 attempts 1 s apart; here `clients` loops share the work.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ATTEMPTS = 5
TIMEOUT_S = 180.0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int  # HTTP status of the last attempt; 0 when no attempt got an answer
    data: dict[str, Any] | None
    latency_s: float  # from the first attempt to the answer

    @property
    def ok(self) -> bool:
        rewards = self.data.get("rewards") if self.data else None
        return self.status == 200 and isinstance(rewards, list) and len(rewards) == 1


async def post_one(url: str, body: dict[str, Any], attempts: int = ATTEMPTS) -> Reply:
    import aiohttp

    started = time.perf_counter()
    status = 0
    for attempt in range(attempts):
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as session,
                session.post(url, json=body) as response,
            ):
                status = response.status
                if status == 200:
                    return Reply(status, await response.json(), time.perf_counter() - started)
        except (aiohttp.ClientError, TimeoutError):
            pass
        if attempt + 1 < attempts:
            await asyncio.sleep(1.0)
    return Reply(status, None, time.perf_counter() - started)


async def post_all(url: str, bodies: Sequence[dict[str, Any]], clients: int) -> tuple[list[Reply], float]:
    """Every body POSTed by `clients` concurrent loops; the replies in order, and the seconds taken."""
    replies: list[Reply | None] = [None] * len(bodies)
    turn = iter(range(len(bodies)))

    async def client() -> None:
        for index in turn:
            replies[index] = await post_one(url, bodies[index])

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    return [r if r is not None else Reply(0, None, 0.0) for r in replies], elapsed
