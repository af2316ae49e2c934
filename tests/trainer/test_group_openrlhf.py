"""OpenRLHF's own client, one request per sample, against group-aware recipes on the gateway.

A group's samples finish generating at different times; here the spread is scaled down (seconds
for minutes) with a hold (`group_hold_s`) scaled alike. OpenRLHF's real reward-fetching code
(`openrlhf.utils.agent`, 0.11.2) sends each sample; its retries after a client timeout are driven
by shortening that timeout (180 s in OpenRLHF) below the hold.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from arbiter.contract import Sample
from services import catalog
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.gateway import group_reference as ref
from tests.trainer.openrlhf_peer import CharTokenizer, SamplingParams, ScriptedEngine, load_agent_module

SIZE = 8


@asynccontextmanager
async def gateway(hold_s: float) -> AsyncIterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": -1,
                "group_hold_s": hold_s,
                "recipes": {"default": {"components": {"math": {"grader": "math"}}}},
                "group_recipes": {"kimi_length": SIZE},
            }
        }
    )
    async with catalog.make_server("gateway", settings) as server:
        # The math pool started before the clock runs: the scaled hold is for waiting, not start-up.
        await server.engine.score([Sample(prompt="warm-up", response="\\boxed{1}", label="1")])
        yield server


@contextmanager
def client_timeout(agent: Any, seconds: float) -> Iterator[None]:
    """OpenRLHF's aiohttp client timeout (180 s, fixed in its code) shortened for the test."""
    aiohttp = agent.aiohttp
    real = aiohttp.ClientTimeout
    aiohttp.ClientTimeout = lambda total=None, **kw: real(total=seconds, **kw)
    try:
        yield
    finally:
        aiohttp.ClientTimeout = real


async def send(
    agent: Any, url: str, prompt: str, response: str, label: str, delay_s: float
) -> dict[str, Any]:
    """One sample, generated `delay_s` after the group started, through OpenRLHF's executor."""
    await asyncio.sleep(delay_s)
    executor = agent.SingleTurnAgentExecutor(url)
    output: dict[str, Any] = await executor.execute(
        prompt,
        label,
        SamplingParams(),
        max_length=4096,
        hf_tokenizer=CharTokenizer(),
        llm_engine=ScriptedEngine({prompt: (response, "stop")}),
    )
    return output


async def run_group(agent: Any, url: str, case: ref.Case, delays: list[float]) -> list[dict[str, Any]]:
    label = json.dumps({"recipe": "kimi_length", "answer": ref.REFERENCE})
    return list(
        await asyncio.gather(
            *(send(agent, url, case.prompt, r, label, d) for r, d in zip(case.responses, delays, strict=True))
        )
    )


def logs_of(output: dict[str, Any], key: str) -> float:
    value = output["extra_logs"][key]
    return float(value[0] if isinstance(value, list) else value)


def reward_of(output: dict[str, Any]) -> float:
    value = output["reward"]
    return float(value[0] if isinstance(value, list) else value)


@pytest.fixture
def agent() -> Any:
    return load_agent_module()


async def test_samples_spread_inside_the_hold_are_answered_together(agent: Any) -> None:
    rng = random.Random(11)
    async with gateway(hold_s=4.0) as server:
        url = f"{server.http_url}/get_reward"
        for index in range(3):
            case = ref.generate(rng, SIZE, f"spread-{index}", "equal" if index == 2 else "mixed")
            delays = sorted(rng.uniform(0.0, 1.5) for _ in range(SIZE))
            outputs = await run_group(agent, url, case, delays)
            assert [reward_of(o) for o in outputs] == pytest.approx(ref.kimi(case))
            assert all(logs_of(o, "group/incomplete") == 0.0 for o in outputs)
            assert all(logs_of(o, "group/size") == SIZE for o in outputs)
            assert len({frozenset(o["extra_logs"]) for o in outputs}) == 1


async def test_samples_spread_past_the_hold(agent: Any) -> None:
    """The early samples are answered at the hold deadline with their own reward, flagged; the
    group still completes with them, and the late samples get the terms over all eight."""
    rng = random.Random(12)
    case = ref.generate(rng, SIZE, "late")
    delays = [0.0, 0.0, 0.1, 0.2, 3.0, 3.1, 3.2, 3.3]
    async with gateway(hold_s=1.5) as server:
        outputs = await run_group(agent, f"{server.http_url}/get_reward", case, delays)
    full, own = ref.kimi(case), ref.per_sample("kimi_length", case)
    for index, output in enumerate(outputs):
        if index < 4:
            assert logs_of(output, "group/incomplete") == 1.0
            assert reward_of(output) == pytest.approx(own[index])
        else:
            assert logs_of(output, "group/incomplete") == 0.0
            assert reward_of(output) == pytest.approx(full[index])
            assert logs_of(output, "group/size") == SIZE


async def test_retries_after_a_client_timeout_rejoin_their_group(agent: Any) -> None:
    """OpenRLHF's client gives up before the group completes (its timeout shorter than the hold)
    and retries: the retry takes the sample's place back, and once the group is complete every
    sample gets the full answer, computed over eight members (none lost, none counted twice)."""
    rng = random.Random(13)
    case = ref.generate(rng, SIZE, "retry")
    delays = [0.0, 0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.6]
    async with gateway(hold_s=8.0) as server:
        with client_timeout(agent, 0.8):
            outputs = await run_group(agent, f"{server.http_url}/get_reward", case, delays)
        groups = server.engine.groups  # type: ignore[attr-defined]
        assert groups.waiting == 0 and not groups.open
    assert [reward_of(o) for o in outputs] == pytest.approx(ref.kimi(case))
    assert all(logs_of(o, "group/incomplete") == 0.0 and logs_of(o, "group/size") == SIZE for o in outputs)
