"""Optional bearer-token auth on HTTP and gRPC; the health probes stay open."""

from __future__ import annotations

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.client import ArbiterClient, ArbiterClientError
from arbiter.contract import Sample
from services.transports.auth import AuthConfigError
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings

TOKEN = "s3cret-token"


async def test_token_required_everywhere_but_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ARBITER_TOKEN", TOKEN)
    async with GraderServer(
        "reward_rules", rules_grader(), server_settings(auth_token_env="TEST_ARBITER_TOKEN")
    ) as s:
        async with httpx.AsyncClient(base_url=s.http_url) as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).status_code == 200
            body = {"query": ["<think>a</think> b"], "prompts": [""], "labels": [""]}
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
                reply = await http.post("/get_reward", json=body, headers=headers)
                assert reply.status_code == 401 and reply.json()["error"]["type"] == "unauthorized"
            assert (await http.get("/metrics")).status_code == 401
            ok = await http.post("/get_reward", json=body, headers={"authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200 and ok.json()["rewards"] == [1.0]

        for transport in ("http", "grpc"):
            target = {"http_url": s.http_url} if transport == "http" else {"grpc_target": s.grpc_target}
            async with ArbiterClient(**target) as anonymous:  # type: ignore[arg-type]
                with pytest.raises(ArbiterClientError) as caught:
                    await anonymous.score([Sample(response="x")])
                assert caught.value.code in ("401", "UNAUTHENTICATED")
            async with ArbiterClient(**target, token=TOKEN) as client:  # type: ignore[arg-type]
                scored = await client.score([Sample(response="<think>a</think> b")])
                assert scored.results[0].reward == 1.0

        async with grpc.aio.insecure_channel(s.grpc_target) as channel:  # gRPC health stays open
            health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
            assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_a_named_but_empty_token_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_ARBITER_TOKEN", raising=False)
    server = GraderServer(
        "reward_rules", rules_grader(), server_settings(auth_token_env="TEST_ARBITER_TOKEN")
    )
    with pytest.raises(AuthConfigError, match="TEST_ARBITER_TOKEN"):
        await server.start()
