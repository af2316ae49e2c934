"""Faults in a real multi-process deployment: a grader replica killed with SIGKILL mid-burst."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers import ServiceProcess, free_port

BURST = 1500


def test_replica_killed_mid_burst_loses_no_sample(tmp_path: Path) -> None:
    ports = [(free_port(), free_port()) for _ in range(2)]
    gateway_port = free_port()
    config = tmp_path / "arbiter.yaml"
    replicas = ", ".join(f"'127.0.0.1:{grpc}'" for _, grpc in ports)
    config.write_text(
        "gateway:\n"
        f"  services: {{reward_rules: {{replicas: [{replicas}]}}}}\n"
        "  recipes: {default: {components: {correct: {grader: math}}}}\n"
        "  health_interval_s: 0.5\n"
    )
    base_env = {**os.environ, "ARBITER_CONFIG": str(config), "ARBITER_LOG__LEVEL": "WARNING"}
    logs = {name: (tmp_path / f"{name}.log").open("wb") for name in ("rules0", "rules1", "gateway")}
    rules = [
        ServiceProcess(
            [sys.executable, "-m", "services.reward_rules"],
            f"http://127.0.0.1:{http}/readyz",
            env={
                **base_env,
                "ARBITER_REWARD_RULES__HTTP_PORT": str(http),
                "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc),
                "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
            },
            output=logs[f"rules{n}"],
        )
        for n, (http, grpc) in enumerate(ports)
    ]
    gateway = ServiceProcess(
        [sys.executable, "-m", "services.gateway"],
        f"http://127.0.0.1:{gateway_port}/readyz",
        env={**base_env, "ARBITER_GATEWAY__HTTP_PORT": str(gateway_port), "ARBITER_GATEWAY__GRPC_PORT": "-1"},
        output=logs["gateway"],
    )

    async def post(session_timeout: aiohttp.ClientTimeout, i: int) -> tuple[int, dict[str, Any]]:
        # As OpenRLHF's rollout actors post: a new session (no keep-alive) per sample.
        async with aiohttp.ClientSession(timeout=session_timeout) as session:
            body = {"query": [f"q{i} \\boxed{{{i % 7}}}"], "prompts": [f"q{i} "], "labels": [str(i % 5)]}
            async with session.post(f"http://127.0.0.1:{gateway_port}/get_reward", json=body) as reply:
                return reply.status, await reply.json(content_type=None)

    async def burst_with_a_kill() -> list[tuple[int, dict[str, Any]] | BaseException]:
        timeout = aiohttp.ClientTimeout(total=180)
        tasks = [asyncio.create_task(post(timeout, i)) for i in range(BURST)]
        await asyncio.sleep(0.7)
        os.kill(rules[0].pid, signal.SIGKILL)  # no goodbye: its in-flight calls just break
        return await asyncio.gather(*tasks, return_exceptions=True)

    for service in rules:
        service.start()
    try:
        with gateway:
            replies = asyncio.run(burst_with_a_kill())
            gateway_exit = gateway.proc.poll() if gateway.proc else None
    finally:
        for service in rules:
            service.stop()
        for log in logs.values():
            log.close()
    failed = [r for r in replies if isinstance(r, BaseException) or r[0] != 200]
    # What the services said, for a failure: the gateway's exit status and its log's tail.
    said = f"gateway exit {gateway_exit}; log:\n" + (tmp_path / "gateway.log").read_text()[-4000:]
    assert not failed, f"{len(failed)} failed, e.g. {failed[:3]!r}; {said}"
    for i, reply in enumerate(replies):
        assert not isinstance(reply, BaseException)
        data = reply[1]
        assert data["extra_logs"]["component/correct/ok"] == [1.0], data  # graded, not a fallback
        assert data["rewards"] == [1.0 if i % 7 == i % 5 else 0.0]
