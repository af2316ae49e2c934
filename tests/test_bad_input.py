"""Bad input gets a clear 4xx / INVALID_ARGUMENT; on /get_reward only an unparseable body does."""

from __future__ import annotations

import json
import math

import grpc
import httpx
import pytest

from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings


@pytest.fixture
async def small_server() -> GraderServer:  # type: ignore[misc]
    settings = server_settings(max_body_bytes=64 * 1024, max_samples_per_request=8)
    async with GraderServer("reward_rules", rules_grader(), settings) as server:
        yield server


def _error_message(reply: httpx.Response) -> str:
    return str(reply.json()["error"]["message"])


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "JSON"),
        (b'{"samples": "nope"}', "samples"),
        (b'{"samples": [{"prompt": "p"}]}', "response"),
        (b'{"samples": [{"response": 5}]}', "response"),
        (b'{"samples": [{"response": "r", "label": ["x"]}]}', "label"),
        (b'{"samples": [{"response": "r", "metadata": {"k": 1}}]}', "metadata"),
        (b'{"samples": [{"response": "r", "surprise": 1}]}', "surprise"),
        (b'{"samples": [], "timeout_s": -1}', "timeout_s"),
        (b"[]", "body"),
    ],
)
async def test_v1_score_rejects_bad_bodies(small_server: GraderServer, body: bytes, needle: str) -> None:
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        reply = await http.post("/v1/score", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text
    assert needle in _error_message(reply)


async def test_body_over_limit_is_413_on_every_endpoint(small_server: GraderServer) -> None:
    huge = "x" * (128 * 1024)
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        for path, body in [
            ("/v1/score", {"samples": [{"response": huge}]}),
            ("/get_reward", {"query": [huge], "prompts": [""], "labels": [""]}),
        ]:
            reply = await http.post(path, json=body)
            assert reply.status_code == 413
            assert "limit" in _error_message(reply)

        async def chunks():  # type: ignore[no-untyped-def]  # no content-length: counted while read
            for _ in range(32):
                yield b"x" * 4096

        reply = await http.post("/get_reward", content=chunks())  # type: ignore[no-untyped-call]
        assert reply.status_code == 413
        # The server is fine afterwards.
        ok = await http.post("/get_reward", json={"query": ["a"], "prompts": [""], "labels": [""]})
        assert ok.status_code == 200


async def test_too_many_samples(small_server: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        reply = await http.post("/v1/score", json={"samples": [{"response": "r"}] * 9})
    assert reply.status_code == 413 and "max_samples_per_request" in _error_message(reply)
    async with grpc.aio.insecure_channel(small_server.grpc_target) as channel:
        stub = pb_grpc.RewardServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Score(pb.ScoreRequest(samples=[pb.Sample(response="r")] * 9))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Score(pb.ScoreRequest(samples=[pb.Sample(response="r")], timeout_s=-2))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        big = pb.Sample(response="x" * (128 * 1024))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Score(pb.ScoreRequest(samples=[big]))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{oops", "JSON"),
        (b'"just a string"', "JSON object"),
        (b'{"prompts": ["p"]}', "query"),
        (b'{"query": "not a list"}', "query"),
        (b'{"query": ["q"], "labels": "x"}', "labels"),
    ],
)
async def test_get_reward_rejects_only_unparseable_bodies(
    small_server: GraderServer, body: bytes, needle: str
) -> None:
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        reply = await http.post("/get_reward", content=body)
    assert reply.status_code == 400
    assert needle in _error_message(reply)


async def test_get_reward_turns_item_problems_into_flagged_fallbacks(small_server: GraderServer) -> None:
    body = {
        "query": ["p<think>a</think> b", 42, "p<think>x</think> y", "q3", "no prompt"],
        "prompts": ["p", "p", "p", {"bad": 1}],
        "labels": ["", "", {"grader": "format"}, "", ""],
    }
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        reply = await http.post("/get_reward", content=json.dumps(body))
    assert reply.status_code == 200
    data = reply.json()
    assert len(data["rewards"]) == 5
    assert all(math.isfinite(v) for v in data["rewards"] + data["scores"])
    assert data["rewards"][0] == 1.0 and data["rewards"][2] == 1.0  # a dict label is fine
    flags = data["extra_logs"]["status/invalid_input"]
    assert flags == [0.0, 1.0, 0.0, 1.0, 1.0]
    assert data["extra_logs"]["status/ok"] == [1.0, 0.0, 1.0, 0.0, 0.0]


async def test_get_reward_without_prompts_and_with_mismatched_prompt(small_server: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        old_client = await http.post("/get_reward", json={"query": ["<think>a</think> b</s>"]})
        mismatch = await http.post(
            "/get_reward",
            json={"query": ["User: hi\nAssistant:<think>a</think> b"], "prompts": ["User:  hi\n"]},
        )
        empty = await http.post("/get_reward", json={"query": [], "prompts": [], "labels": []})
    assert old_client.json()["rewards"] == [1.0]
    assert old_client.json()["extra_logs"]["response/stopped"] == [1.0]
    assert mismatch.status_code == 200
    assert mismatch.json()["extra_logs"]["input/prompt_mismatch"] == [1.0]
    assert empty.status_code == 200
    assert empty.json()["rewards"] == empty.json()["scores"] == []
    assert all(values == [] for values in empty.json()["extra_logs"].values())


async def test_unknown_grader_in_label_is_invalid_input(small_server: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=small_server.http_url) as http:
        reply = await http.post(
            "/v1/score", json={"samples": [{"response": "r", "label": '{"grader": "chess"}'}]}
        )
    result = reply.json()["results"][0]
    assert result["status"] == "INVALID_INPUT"
    assert "chess" in result["detail"] and "format" in result["detail"]
