"""The contract over real HTTP (uvicorn) and real gRPC (grpc.aio) on loopback."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from arbiter.client import ArbiterClient
from arbiter.contract import Sample, Status
from services.transports.server import GraderServer
from tests.helpers import ScriptedGrader, WatchedGrader, server_settings

PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
RESPONSES = [
    "<think>2+2 is 4. Wait, let me double-check: yes.</think> The answer is \\boxed{4}<|im_end|>",
    "The answer is 4<|im_end|>",
    "<think>hmm</think><think>again</think> 5",
    "<think>long thought that never ends",
]


async def test_openrlhf_body_over_http_matches_grpc(rules_server: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=rules_server.http_url) as http:
        per_sample = []
        for response in RESPONSES:
            body = {"query": [PROMPT + response], "prompts": [PROMPT], "labels": [""]}
            reply = await http.post("/get_reward", json=body)
            assert reply.status_code == 200
            data = reply.json()
            assert set(data) == {"rewards", "scores", "extra_logs"}
            assert len(data["rewards"]) == len(data["scores"]) == 1
            assert all(isinstance(v, float) and math.isfinite(v) for v in data["rewards"] + data["scores"])
            for key, values in data["extra_logs"].items():
                assert key not in {"reward", "score", "kl"}
                assert len(values) == 1 and isinstance(values[0], float), key
            per_sample.append(data)
        # Every sample carries the same extra_logs keys (OpenRLHF stacks them).
        assert len({tuple(sorted(d["extra_logs"])) for d in per_sample}) == 1
        assert reply.headers["x-arbiter-grader"].startswith("reward_rules/")

    assert [d["rewards"][0] for d in per_sample] == [1.0, 0.0, 0.0, 0.0]
    first = per_sample[0]["extra_logs"]
    assert first["reflect/wait"] == [1.0] and first["reflect/double_check"] == [1.0]
    assert first["response/stopped"] == [1.0] and first["status/ok"] == [1.0]
    assert per_sample[3]["extra_logs"]["response/stopped"] == [0.0]  # no EOS: hit the length cap

    # The same samples over gRPC give the same numbers. /get_reward strips the EOS text and notes
    # where the sample came from, why it stopped and what was cut (so prompt+response+eos == query).
    samples = [
        Sample(
            prompt=PROMPT,
            response=r.removesuffix("<|im_end|>"),
            metadata={
                "finish_reason": "stop" if r.endswith("<|im_end|>") else "length",
                "source": "openrlhf",
                "eos_text": "<|im_end|>" if r.endswith("<|im_end|>") else "",
            },
        )
        for r in RESPONSES
    ]
    async with ArbiterClient(grpc_target=rules_server.grpc_target) as client:
        reply_grpc = await client.score(samples)
    assert reply_grpc.grader.name == "reward_rules"
    for data, result in zip(per_sample, reply_grpc.results, strict=True):
        assert result.reward == data["rewards"][0]
        assert result.score == data["scores"][0]
        http_logs = {k: v[0] for k, v in data["extra_logs"].items() if k != "input/prompt_mismatch"}
        assert result.logs == {**http_logs, "cache/hit": 1.0}  # scored once, over HTTP


async def test_v1_score_http_and_grpc_agree(rules_server: GraderServer) -> None:
    samples = [Sample(prompt="p", response=r, label="") for r in RESPONSES]
    async with (
        ArbiterClient(http_url=rules_server.http_url) as over_http,
        ArbiterClient(grpc_target=rules_server.grpc_target) as over_grpc,
    ):
        a = await over_http.score(samples, request_id="req-1")
        b = await over_grpc.score(samples, request_id="req-2")
        assert [r.model_copy(update={"logs": {**r.logs, "cache/hit": 1.0}}) for r in a.results] == b.results
        assert a.grader == b.grader == await over_http.info() == await over_grpc.info()
        assert a.request_id == "req-1" and b.request_id == "req-2"
        assert a.grader.config_hash and a.grader.version


async def test_openrlhf_batch_of_several(rules_server: GraderServer) -> None:
    body = {
        "query": [PROMPT + r for r in RESPONSES],
        "prompts": [PROMPT] * len(RESPONSES),
        "labels": [""] * len(RESPONSES),
    }
    async with httpx.AsyncClient(base_url=rules_server.http_url) as http:
        data = (await http.post("/get_reward", json=body)).json()
    assert data["rewards"] == [1.0, 0.0, 0.0, 0.0]
    assert all(len(v) == len(RESPONSES) for v in data["extra_logs"].values())


async def test_health_info_metrics_and_reflection(rules_server: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=rules_server.http_url) as http:
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        assert (await http.get("/readyz")).json()["status"] == "ready"
        info = (await http.get("/v1/info")).json()
        assert info["name"] == "reward_rules" and "format" in info["capabilities"]
        await http.post("/get_reward", json={"query": ["x"], "prompts": [""], "labels": [""]})
        metrics = (await http.get("/metrics")).text
    assert 'arbiter_requests_total{code="200",endpoint="/get_reward",transport="http"}' in metrics
    assert 'arbiter_samples_total{status="OK"}' in metrics
    assert "arbiter_batch_size_bucket" in metrics

    async with grpc.aio.insecure_channel(rules_server.grpc_target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "arbiter.v1.RewardService"):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)

        async def one_request():  # type: ignore[no-untyped-def]
            yield reflection_pb2.ServerReflectionRequest(list_services="")

        names = []
        async for reply in stub.ServerReflectionInfo(one_request()):  # type: ignore[no-untyped-call]
            names = [s.name for s in reply.list_services_response.service]
    assert "arbiter.v1.RewardService" in names


@pytest.mark.parametrize("transport", ["http", "grpc"])
async def test_grader_failure_is_a_status_not_an_error(transport: str) -> None:
    from tests.helpers import server_settings

    settings = server_settings(fallback_reward=-1.0)
    async with GraderServer("scripted", ScriptedGrader(), settings) as server:
        kwargs = {"http_url": server.http_url} if transport == "http" else {"grpc_target": server.grpc_target}
        async with ArbiterClient(**kwargs) as client:  # type: ignore[arg-type]
            reply = await client.score(
                [Sample(response="ok"), Sample(response="raise"), Sample(response="fine")]
            )
    statuses = [r.status for r in reply.results]
    assert statuses == [Status.OK, Status.GRADER_ERROR, Status.OK]
    assert [r.reward for r in reply.results] == [2.0, -1.0, 4.0]
    assert "scripted failure" in reply.results[1].detail
    assert reply.results[1].logs["status/grader_error"] == 1.0


async def test_metadata_grader_overrides_the_label(rules_server: GraderServer) -> None:
    async with ArbiterClient(grpc_target=rules_server.grpc_target) as client:
        reply = await client.score(
            [
                Sample(
                    response="<think>a</think> b", label='{"grader": "chess"}', metadata={"grader": "format"}
                )
            ]
        )
        info = await client.info()
    assert reply.results[0].status is Status.OK and reply.results[0].reward == 1.0
    assert "rules/format_ok" in info.log_keys  # the grader's own keys are published


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("path", ["/v1/score", "/get_reward"])
async def test_an_http_client_that_hangs_up_cancels_its_samples_work(path: str) -> None:
    grader = WatchedGrader()
    async with GraderServer("scripted", grader, server_settings(deadline_s=60)) as server:
        host, port = server.http_url.split("//")[1].rstrip("/").split(":")
        body = (
            {"samples": [{"response": "hang"}]}
            if path == "/v1/score"
            else {"query": ["hang"], "prompts": [""], "labels": [""]}
        )
        data = json.dumps(body).encode()
        _, writer = await asyncio.open_connection(host, int(port))
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(data)}\r\n\r\n"
        writer.write(head.encode() + data)
        await writer.drain()
        await asyncio.sleep(0.2)  # in the grader
        writer.close()  # the client hangs up
        await _until(lambda: grader.cancelled > 0)
        assert grader.cancelled == 1


async def test_a_cancelled_grpc_call_cancels_its_samples_work() -> None:
    from arbiter.v1 import reward_pb2 as pb
    from arbiter.v1 import reward_pb2_grpc as pb_grpc

    grader = WatchedGrader()
    async with GraderServer("scripted", grader, server_settings(deadline_s=60)) as server:
        async with grpc.aio.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.RewardServiceStub(channel)  # type: ignore[no-untyped-call]
            call = stub.Score(pb.ScoreRequest(samples=[pb.Sample(response="hang")]), timeout=30)
            await asyncio.sleep(0.2)
            call.cancel()
            await _until(lambda: grader.cancelled > 0)
        assert grader.cancelled == 1
