"""veRL and TRL adapters, and the trainer connection when the gateway is down."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import trainer.gateway
from services import catalog
from services.common.server import GraderServer
from services.settings import ArbiterSettings
from tests.helpers import free_port
from trainer.gateway import UNREACHABLE_KEY, GatewayConnection


@pytest.fixture
async def gateway(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": 0,
                "routes": [{"datasource": "gsm8k|math", "recipe": "math"}, {"recipe": "default"}],
                "recipes": {
                    "math": {"components": {"math": {"grader": "math"}}},
                    "default": {"components": {"fmt": {"grader": "format"}}},
                },
            }
        }
    )
    async with catalog.make_server("gateway", settings) as server:
        monkeypatch.setenv("ARBITER_GATEWAY", server.grpc_target)
        monkeypatch.setattr(trainer.gateway, "_connection", None)
        yield server


async def test_verl_compute_score(gateway: GraderServer) -> None:
    from trainer.verl_reward import compute_score, compute_score_async

    right = await compute_score_async("gsm8k", "so the answer is #### 12", "12", extra_info={"prompt": "q"})
    assert right["score"] == 1.0 and right["acc"] == 1.0 and right["component/math"] == 1.0
    wrong = await compute_score_async("math", "\\boxed{13}", {"grader": "math", "answer": "12"})
    assert wrong["score"] == 0.0
    other = await compute_score_async("chat", "<think>hm</think> hello", "")
    assert other["score"] == 1.0 and set(other) == set(right)  # same keys for every sample
    assert compute_score.__name__ == "compute_score"


async def test_trl_reward_function(gateway: GraderServer) -> None:
    from trainer.trl_reward import arbiter_reward_async

    reward = arbiter_reward_async(label_column="answer")
    assert reward.__name__ == "arbiter_answer"
    values = await reward(
        prompts=[[{"role": "user", "content": "2+2?"}], "3+3?", "x"],
        completions=[[{"role": "assistant", "content": "\\boxed{4}"}], "\\boxed{7}", "no idea"],
        answer=["4", "6", '{"grader": "nope"}'],
        datasource=["math", "math", "math"],
    )
    assert values == [1.0, 0.0, None]  # the unroutable sample is left out, not zeroed


def test_unreachable_gateway_gives_flagged_fallbacks_not_exceptions() -> None:
    from services.common.contract import Sample, Status

    connection = GatewayConnection(f"127.0.0.1:{free_port()}", timeout_s=0.5, fallback_reward=-1.0)
    results = connection.score([Sample(response="x"), Sample(response="y")])
    connection.close()
    assert [r.reward for r in results] == [-1.0, -1.0]
    assert all(r.status is Status.UPSTREAM_ERROR and r.logs[UNREACHABLE_KEY] == 1.0 for r in results)
    assert "unreachable" in results[0].detail
