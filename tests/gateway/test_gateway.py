"""The gateway over real servers: routing, composition, remote replicas, failures, stats."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arbiter.client import ArbiterClient
from arbiter.contract import Sample, Status
from services import catalog
from services.common.settings import CacheSettings
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.helpers import ScriptedGrader, free_port, rules_grader, server_settings

GOOD = "<think>reasoning</think> The answer is \\boxed{4}"
BAD = "no thinking at all"


def settings_with(gateway: dict[str, Any]) -> ArbiterSettings:
    return ArbiterSettings.model_validate(
        {
            "gateway": {"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, **gateway},
            "reward_rules": {"host": "127.0.0.1", "http_port": 0, "grpc_port": 0},
        }
    )


RECIPES = {
    "shaped": {
        "components": {"fmt": {"grader": "format"}, "rules": {"grader": "reward_rules", "value": "score"}},
        "formula": "2*fmt - 0.5*rules",
        "score": "rules",
        "clip": [-1, 1.25],
    },
    "plain": {"components": {"fmt": {"grader": "format"}}},
}
ROUTES = [
    {"datasource": "gsm8k|math.*", "recipe": "shaped"},
    {"prompt_regex": "^SHAPE", "recipe": "shaped"},
    {"recipe": "plain"},
]


@pytest.fixture
async def gateway() -> AsyncIterator[GraderServer]:
    settings = settings_with({"routes": ROUTES, "recipes": RECIPES})
    async with catalog.make_server("gateway", settings) as server:
        yield server


async def score(server: GraderServer, samples: list[Sample]) -> list[Any]:
    async with ArbiterClient(grpc_target=server.grpc_target) as client:
        return (await client.score(samples)).results


async def test_recipes_compose_component_rewards(gateway: GraderServer) -> None:
    good, bad = await score(
        gateway,
        [
            Sample(prompt="q", response=GOOD, metadata={"datasource": "math_500"}),
            Sample(prompt="q", response=BAD, metadata={"datasource": "math_500"}),
        ],
    )
    assert good.status is Status.OK and good.reward == pytest.approx(1.25)  # 2*1 - 0.5*1 = 1.5, clipped
    assert good.score == 1.0  # the `rules` component's score
    assert bad.reward == pytest.approx(0.0) and bad.score == 0.0
    logs = good.logs
    assert logs["component/fmt"] == 1.0 and logs["component/rules"] == 1.0
    assert logs["component/fmt/ok"] == logs["component/rules/ok"] == 1.0
    assert logs["gateway/degraded"] == 0.0
    assert logs["rules/format_ok"] == 1.0  # the component grader's own logs are forwarded
    assert logs["reflect/any"] == 0.0 and logs["status/ok"] == 1.0  # the kit's own logs too
    assert "recipe shaped" in good.detail


async def test_routing_by_label_datasource_prompt_and_default(gateway: GraderServer) -> None:
    samples = [
        Sample(prompt="q", response=GOOD, label=json.dumps({"datasource": "gsm8k"})),  # route 1
        Sample(prompt="SHAPE it", response=GOOD),  # route 2
        Sample(prompt="q", response=GOOD),  # default: plain -> 1.0
        Sample(prompt="q", response=GOOD, label='{"recipe": "shaped"}'),  # the label names a recipe
        Sample(prompt="q", response=GOOD, label='{"grader": "format"}'),  # ... or a grader
        Sample(prompt="q", response=GOOD, label='{"grader": "astrology"}'),
    ]
    results = await score(gateway, samples)
    assert [r.reward for r in results[:5]] == pytest.approx([1.25, 1.25, 1.0, 1.25, 1.0])
    assert results[5].status is Status.INVALID_INPUT
    assert "astrology" in results[5].detail and "shaped" in results[5].detail
    keys = {frozenset(r.logs) for r in results}
    assert len(keys) == 1, "every sample carries the same log keys, whichever recipe graded it"


async def test_openrlhf_endpoint_through_the_gateway(gateway: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.http_url) as http:
        replies = await asyncio.gather(
            *(
                http.post("/get_reward", json={"query": [p + r], "prompts": [p], "labels": [label]})
                for p, r, label in [
                    ("SHAPE ", GOOD + "<|im_end|>", ""),
                    ("q ", BAD, ""),
                    ("q ", GOOD, '{"datasource": "gsm8k"}'),
                ]
            )
        )
    data = [r.json() for r in replies]
    assert [d["rewards"] for d in data] == [[1.25], [0.0], [1.25]]
    assert len({tuple(sorted(d["extra_logs"])) for d in data}) == 1


async def test_bad_config_is_refused_at_start_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="no service has grader 'nonexistent'"):
        catalog.make_server(
            "gateway",
            settings_with({"recipes": {"default": {"components": {"x": {"grader": "nonexistent"}}}}}),
        )
    with pytest.raises(ValueError, match="names recipe 'missing'"):
        settings_with({"routes": [{"recipe": "missing"}]})
    with pytest.raises(ValueError, match="uses 'typo'"):
        settings_with(
            {"recipes": {"default": {"components": {"fmt": {"grader": "format"}}, "formula": "fmt + typo"}}}
        )


async def test_remote_replicas_balance_fail_over_and_fall_back() -> None:
    replicas = [GraderServer("reward_rules", rules_grader(), server_settings()) for _ in range(2)]
    for replica in replicas:
        await replica.start()
    dead = f"127.0.0.1:{free_port()}"
    settings = settings_with(
        {
            "services": {"reward_rules": {"replicas": [r.grpc_target for r in replicas] + [dead]}},
            "recipes": {
                "default": {
                    "components": {
                        "fmt": {"grader": "format", "fallback": -0.5},
                        "rules": {"grader": "reward_rules", "fallback": -0.5},
                    }
                }
            },
            "health_interval_s": 0.2,
            "eject_cooldown_s": 30,
            "deadline_s": 10,
        }
    )
    server = catalog.make_server("gateway", settings)
    await server.start()
    try:
        for round_ in range(4):  # one gateway batch -> one call per service -> the next replica
            samples = [Sample(prompt="q", response=f"{GOOD} {round_} {i}") for i in range(10)]
            results = await score(server, samples)
            assert all(r.status is Status.OK and r.reward == 2.0 for r in results)
        served = [await _served(replica) for replica in replicas]
        assert all(count > 0 for count in served), f"load not spread: {served}"

        await replicas[0].stop()  # one replica dies mid-run
        results = await score(server, [Sample(prompt="q", response=f"{GOOD} again {i}") for i in range(20)])
        assert all(r.status is Status.OK and r.reward == 2.0 for r in results)

        await replicas[1].stop()  # all of them
        results = await score(server, [Sample(prompt="q", response=f"{GOOD} alone {i}") for i in range(3)])
        for result in results:
            assert result.status is Status.UPSTREAM_ERROR  # every component failed
            assert result.logs["component/fmt/ok"] == 0.0 and result.logs["gateway/degraded"] == 1.0
            assert "no replica answered" in result.detail
    finally:
        await server.stop()
        for replica in replicas:
            await replica.stop()


async def _served(server: GraderServer) -> float:
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        metrics = (await http.get("/metrics")).text
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("arbiter_samples_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_a_hung_component_yields_its_fallback_in_time() -> None:
    async with GraderServer("scripted", ScriptedGrader(), server_settings()) as slow:
        settings = settings_with(
            {
                "services": {"scripted": {"replicas": [slow.grpc_target]}},
                "recipes": {
                    "default": {
                        "components": {
                            "fmt": {"grader": "format"},
                            "slow": {
                                "grader": "scripted",
                                "service": "scripted",
                                "fallback": -3,
                                "timeout_s": 0.5,
                            },
                        },
                        "formula": "fmt + slow",
                    }
                },
            }
        )
        async with catalog.make_server("gateway", settings) as server:
            loop = asyncio.get_running_loop()
            started = loop.time()
            hung, fast = await score(server, [Sample(response="hang"), Sample(response="<think>a</think> b")])
            elapsed = loop.time() - started
    assert hung.status is Status.OK and hung.reward == pytest.approx(0.0 - 3.0)
    assert hung.logs["component/slow/ok"] == 0.0 and hung.logs["gateway/degraded"] == 1.0
    assert "slow failed" in hung.detail
    # The scripted grader scores its batch together: the hang takes the other sample's component down too.
    assert fast.logs["component/fmt/ok"] == 1.0
    assert elapsed < 30


async def test_identical_samples_are_scored_once() -> None:
    grader = ScriptedGrader(batch_delay_s=0.2)
    async with GraderServer("scripted", grader, server_settings(), CacheSettings(backend="none")) as backend:
        settings = settings_with(
            {
                "services": {"scripted": {"replicas": [backend.grpc_target]}},
                "recipes": {"default": {"components": {"s": {"grader": "scripted", "service": "scripted"}}}},
            }
        )
        async with catalog.make_server("gateway", settings) as server:
            same = Sample(prompt="p", response="identical", label="l")
            batches = await asyncio.gather(*(score(server, [same]) for _ in range(30)))
            again = await score(server, [same])
    assert all(b[0].reward == 9.0 for b in batches) and again[0].reward == 9.0
    assert sum(grader.batches) == 1  # in flight once, then the gateway's cache


async def test_stats_window_and_warnings(gateway: GraderServer) -> None:
    healthy = [
        Sample(prompt="q", response=f"<think>wait, {i} actually</think> ok<|im_end|>") for i in range(80)
    ]
    loop = "again and again " * 60
    collapsed = [Sample(prompt="q", response=f"<think>{loop} {i}") for i in range(80)]  # no EOS: at the cap
    await score(gateway, healthy)
    await score(gateway, collapsed)
    async with httpx.AsyncClient(base_url=gateway.http_url) as http:
        stats = (await http.get("/v1/stats")).json()
    assert stats["window"] == 160 and stats["samples_seen"] == 160
    assert stats["truncated_rate"] == pytest.approx(0.5)
    assert stats["accuracy_by_datasource"]["(none)"]["n"] == 160
    kinds = {w["kind"] for w in stats["warnings"]}
    assert "length_hacking" in kinds and "collapse" in kinds
    assert "reward_saturation" not in kinds


def test_gateway_process_with_remote_replicas(tmp_path: Path) -> None:
    """`python -m services.gateway` built before its event loop starts, reaching a remote service."""
    rules_http, rules_grpc, gateway_http = free_port(), free_port(), free_port()
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "gateway:\n"
        f"  services: {{reward_rules: {{replicas: ['127.0.0.1:{rules_grpc}']}}}}\n"
        "  recipes: {default: {components: {fmt: {grader: format}}}}\n"
    )
    env = {
        **os.environ,
        "ARBITER_CONFIG": str(config),
        "ARBITER_REWARD_RULES__HTTP_PORT": str(rules_http),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(rules_grpc),
        "ARBITER_GATEWAY__HTTP_PORT": str(gateway_http),
        "ARBITER_GATEWAY__GRPC_PORT": "-1",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", f"services.{name}"], env=env, stderr=subprocess.PIPE, text=True
        )
        for name in ("reward_rules", "gateway")
    ]
    try:
        url = f"http://127.0.0.1:{gateway_http}"
        for _ in range(300):
            assert all(p.poll() is None for p in procs), [p.stderr.read() for p in procs if p.stderr]
            try:
                reply = httpx.post(f"{url}/get_reward", json={"query": ["<think>a</think> b"]}, timeout=5)
                if reply.status_code == 200 and reply.json()["extra_logs"]["status/ok"] == [1.0]:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert reply.json()["rewards"] == [1.0] and reply.json()["extra_logs"]["component/fmt/ok"] == [1.0]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            assert proc.wait(timeout=30) == 0
