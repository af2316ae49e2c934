"""The Ray Serve app on a local CPU Ray: OpenRLHF-shaped requests through the gateway ingress get
correct rewards from two reward_rules replicas, and reward_rules scales up under load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from testkit.procs import free_port

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]
ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from services import ray_serve  # noqa: E402  (after importorskip: needs ray)

ARBITER_CONFIG = {
    "cache": {"backend": "none"},
    "gateway": {
        "routes": [{"recipe": "math"}],
        "recipes": {"math": {"components": {"correct": {"grader": "math"}}, "score": "correct"}},
        # one sample per handle call, many in flight: the load reaches reward_rules as requests
        "batch": {"max_batch_size": 1, "max_wait_ms": 0, "max_concurrent_batches": 64},
    },
    "reward_rules": {"math": {"workers": 1}},
}

SERVE_CONFIG: dict[str, Any] = {
    "applications": [
        {
            "name": "arbiter",
            "route_prefix": "/",
            "import_path": "services.ray_serve:build_app",
            "args": {"config": None},
            "deployments": [
                {
                    "name": "gateway",
                    "num_replicas": 1,
                    "max_ongoing_requests": 4096,
                    "ray_actor_options": {"num_cpus": 0.5},
                },
                {
                    "name": "reward_rules",
                    "max_ongoing_requests": 64,
                    "autoscaling_config": {
                        "min_replicas": 2,
                        "max_replicas": 3,
                        "target_ongoing_requests": 1,
                        "upscale_delay_s": 1,
                        "downscale_delay_s": 600,
                        # longer than Serve's 10 s metrics interval, or it warns (and later refuses)
                        "look_back_period_s": 11,
                    },
                    "ray_actor_options": {"num_cpus": 0.5},
                },
            ],
        }
    ]
}


def openrlhf_body(k: int, correct: bool) -> dict[str, list[str]]:
    """One sample, as an OpenRLHF 0.11 rollout actor posts it (prompt + response in `query`)."""
    prompt = f"<|im_start|>user\nSimplify (x^2-{k * k})/(x-{k}).<|im_end|>\n<|im_start|>assistant\n"
    answer = f"x+{k}" if correct else f"x-{k + 1}"
    response = f"<think>factor the numerator</think> The answer is \\boxed{{{answer}}}<|im_end|>"
    return {"query": [prompt + response], "prompts": [prompt], "labels": [f"\\frac{{x^2-{k * k}}}{{x-{k}}}"]}


def replicas(status: Any, deployment: str) -> int:
    return int(status.applications["arbiter"].deployments[deployment].replica_states.get("RUNNING", 0))


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("ray")
    (folder / "arbiter.yaml").write_text(yaml.safe_dump(ARBITER_CONFIG))
    (folder / "serve.yaml").write_text(yaml.safe_dump(SERVE_CONFIG))
    url = ray_serve.start(
        config=folder / "arbiter.yaml",
        host="127.0.0.1",
        port=free_port(),
        serve_config=folder / "serve.yaml",
        num_cpus=4,
    )
    try:
        yield url
    finally:
        serve.shutdown()
        ray.shutdown()


async def post(session: aiohttp.ClientSession, url: str, body: dict[str, list[str]]) -> dict[str, Any]:
    async with session.post(f"{url}/get_reward", json=body) as response:
        assert response.status == 200, await response.text()
        payload: dict[str, Any] = await response.json()
        return payload


async def test_openrlhf_requests_get_correct_rewards(gateway_url: str) -> None:
    assert replicas(serve.status(), "reward_rules") == 2
    cases = [(k, k % 3 != 0) for k in range(2, 42)]
    async with aiohttp.ClientSession() as session:
        answers = await asyncio.gather(*(post(session, gateway_url, openrlhf_body(k, ok)) for k, ok in cases))
    for (k, correct), answer in zip(cases, answers, strict=True):
        assert answer["rewards"] == [1.0 if correct else 0.0], (k, answer)
        assert answer["scores"] == [1.0 if correct else 0.0]
        assert answer["extra_logs"]["component/correct/ok"] == [1.0]
        assert all(isinstance(v, list) and len(v) == 1 for v in answer["extra_logs"].values())


async def test_reward_rules_scales_up_under_load(gateway_url: str) -> None:
    assert replicas(serve.status(), "reward_rules") == 2
    stop = asyncio.Event()
    wrong: list[tuple[int, Any]] = []

    async def client(offset: int) -> None:
        k = 1000 + offset
        async with aiohttp.ClientSession() as session:
            while not stop.is_set():
                answer = await post(session, gateway_url, openrlhf_body(k, True))
                if answer["rewards"] != [1.0]:
                    wrong.append((k, answer))
                k += 97

    clients = [asyncio.create_task(client(i)) for i in range(48)]
    deadline = time.monotonic() + 120
    seen = 2
    try:
        while time.monotonic() < deadline and seen < 3:
            await asyncio.sleep(1)
            seen = max(seen, replicas(serve.status(), "reward_rules"))
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
    assert seen == 3, "reward_rules did not scale from 2 to 3 replicas under load within 120 s"
    assert not wrong, wrong[:3]
