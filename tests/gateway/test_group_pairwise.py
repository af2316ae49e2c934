"""The pairwise design: the judge's pairwise rubric (both orders) over every pair of a group, the
reward a member's win rate, against a reference over a fake judge with a known preference.

The fake chat-completions server prefers an answer containing GOOD over one containing BAD in
either position, and otherwise answers "[[A]]" (pure position bias, which the rubric's two
orders turn into a tie): so a GOOD member wins 1 against each BAD one and 0.5 against its like.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from arbiter.client import ArbiterClient
from arbiter.contract import Result, Sample
from services import catalog
from services.gateway.group_recipes import preset
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.judge_proxy.fake_openai import FakeOpenAI, directive

SIZES = (1, 2, 3, 5, 8)


def reference(kinds: list[str]) -> list[float]:
    n = len(kinds)
    if n == 1:
        return [0.5]
    out = []
    for i, mine in enumerate(kinds):
        total = 0.0
        for j, theirs in enumerate(kinds):
            if i != j:
                total += 0.5 if mine == theirs else (1.0 if mine == "GOOD" else 0.0)
        out.append(total / (n - 1))
    return out


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[GraderServer, FakeOpenAI]]:
    async with FakeOpenAI() as fake:
        settings = ArbiterSettings.model_validate(
            {
                "gateway": {
                    "host": "127.0.0.1",
                    "http_port": 0,
                    "grpc_port": 0,
                    "group_hold_s": 30.0,
                    "recipes": {
                        "default": {"components": {"math": {"grader": "math"}}},
                        **{f"pairwise_{n}": preset("pairwise", n).model_dump(mode="json") for n in SIZES},
                    },
                },
                "judge_proxy": {
                    "upstreams": [{"name": "u0", "base_url": fake.url, "model": fake.model}],
                    "retry": {"backoff_base_s": 0.01, "backoff_max_s": 0.05},
                },
                "cache": {"backend": "none"},
            }
        )
        async with catalog.make_server("gateway", settings) as server:
            yield server, fake


def group(rng: random.Random, n: int, tag: str) -> tuple[str, list[str], list[str]]:
    prompt = f"Question {tag} {directive(prefer='GOOD', over='BAD')}"
    kinds = [rng.choice(("GOOD", "BAD")) for _ in range(n)]
    return prompt, kinds, [f"{kind} answer number {i}" for i, kind in enumerate(kinds)]


def label(n: int) -> str:
    return f'{{"recipe": "pairwise_{n}"}}'


async def test_win_rates_over_grpc_v1_score_and_get_reward(gateway: tuple[GraderServer, FakeOpenAI]) -> None:
    server, fake = gateway
    rng = random.Random(41)
    client = ArbiterClient(grpc_target=server.grpc_target)
    try:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as http:
            for n in SIZES:
                prompt, kinds, responses = group(rng, n, f"grpc-{n}")
                samples = [Sample(prompt=prompt, response=r, label=label(n)) for r in responses]
                reply = await client.score(samples, timeout_s=30)
                assert [r.reward for r in reply.results] == pytest.approx(reference(kinds)), kinds
                assert all(r.logs["group/win_rate"] == r.reward for r in reply.results)

                prompt, kinds, responses = group(rng, n, f"http-{n}")
                body = {"samples": [{"prompt": prompt, "response": r, "label": label(n)} for r in responses]}
                results = [
                    Result.model_validate(r)
                    for r in (await http.post("/v1/score", json=body)).json()["results"]
                ]
                assert [r.reward for r in results] == pytest.approx(reference(kinds)), kinds

                prompt, kinds, responses = group(rng, n, f"openrlhf-{n}")
                replies = await asyncio.gather(
                    *(
                        http.post(
                            "/get_reward",
                            json={"query": [prompt + r], "prompts": [prompt], "labels": [label(n)]},
                        )
                        for r in responses
                    )
                )
                data: list[dict[str, Any]] = [reply.json() for reply in replies]
                assert [d["rewards"][0] for d in data] == pytest.approx(reference(kinds)), kinds
                assert all(d["extra_logs"]["group/incomplete"] == [0.0] for d in data)
    finally:
        await client.aclose()
    # n(n-1)/2 pairs a group, each judged in both orders: 2 requests a pair.
    assert fake.count == 3 * sum(n * (n - 1) for n in SIZES)
