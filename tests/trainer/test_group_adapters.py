"""The veRL and TRL adapters against group-aware recipes: whole groups in one call (TRL), one
sample per call keyed by veRL's uid (veRL's reward loop scores a sample at a time)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

import pytest

from arbiter.contract import Sample
from services import catalog
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.gateway import group_reference as ref
from tests.trainer.gateways import adapter_env

SIZE = 4


@pytest.fixture
async def gateway() -> AsyncIterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": 0,
                "group_hold_s": 20.0,
                "recipes": {"default": {"components": {"math": {"grader": "math"}}}},
                "group_recipes": {"kimi_length": SIZE},
            }
        }
    )
    async with catalog.make_server("gateway", settings) as server:
        await server.engine.score([Sample(prompt="warm-up", response="\\boxed{1}", label="1")])
        yield server


LABEL = json.dumps({"recipe": "kimi_length", "answer": ref.REFERENCE})


async def test_trl_batch_of_whole_groups(gateway: GraderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from arbiter.adapters.trl_reward import arbiter_reward

    rng = random.Random(21)
    groups = [ref.generate(rng, size, f"trl-{size}") for size in (3, 5)]  # TRL's batch: its own sizes
    prompts = [g.prompt for g in groups for _ in g.responses]
    completions = [r for g in groups for r in g.responses]
    with adapter_env(monkeypatch, gateway.grpc_target):
        rewards = await asyncio.to_thread(
            arbiter_reward("answer"), prompts, completions, answer=[LABEL] * len(prompts)
        )
    assert rewards == pytest.approx([r for g in groups for r in ref.kimi(g)])


async def test_verl_one_sample_per_call_grouped_by_uid(
    gateway: GraderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.adapters.verl_reward import compute_score

    case = ref.generate(random.Random(22), SIZE, "verl")
    with adapter_env(monkeypatch, gateway.grpc_target):
        outputs = await asyncio.gather(
            *(
                asyncio.to_thread(
                    compute_score,
                    "math",
                    r,
                    LABEL,
                    {"prompt": "other text: uid decides", "group_id": "uid-7"},
                )
                for r in case.responses
            )
        )
    assert [o["score"] for o in outputs] == pytest.approx(ref.kimi(case))
