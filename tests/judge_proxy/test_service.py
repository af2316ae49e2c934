"""The judge served by the kit over real HTTP: /get_reward (OpenRLHF), /v1/score, /metrics, deadlines."""

from __future__ import annotations

import json
import time

import httpx

from services.judge_proxy.build import build_grader
from services.transports.server import GraderServer
from tests.judge_proxy.fake_openai import FakeOpenAI, directive
from tests.judge_proxy.judges import judge_settings


def serve(settings: object) -> GraderServer:
    return GraderServer("judge_proxy", build_grader(settings), settings)  # type: ignore[arg-type]


async def test_get_reward_pairwise_from_the_label_column(fake: FakeOpenAI) -> None:
    async with serve(judge_settings(fake)) as server, httpx.AsyncClient(base_url=server.http_url) as http:
        prompt = (
            f"<|im_start|>user\nQ {directive(prefer='GOOD', over='BAD')}<|im_end|>\n<|im_start|>assistant\n"
        )
        body = {
            "query": [prompt + "GOOD answer<|im_end|>"],
            "prompts": [prompt],
            "labels": [json.dumps({"grader": "judge", "rubric": "pairwise", "baseline": "BAD answer"})],
        }
        reply = (await http.post("/get_reward", json=body)).json()
        assert reply["rewards"] == [1.0] and reply["scores"] == [1.0]
        assert reply["extra_logs"]["judge/calls"] == [2.0] and reply["extra_logs"]["status/ok"] == [1.0]
        judged = fake.requests[0].body["messages"][1]["content"]
        assert "GOOD answer" in judged and "<|im_end|>" not in judged.split("Answer]\n")[1].split("\n")[0]
        metrics = (await http.get("/metrics")).text
        assert 'arbiter_judge_upstream_requests_total{outcome="ok",upstream="u0"} 2.0' in metrics
        assert "arbiter_judge_cache_lookups_total" in metrics


async def test_a_hung_upstream_answers_get_reward_in_time_with_the_fallback(fake: FakeOpenAI) -> None:
    fake.behaviour = {"hang": True}
    settings = judge_settings(fake, deadline_s=2.0, fallback_reward=-1.0)
    async with serve(settings) as server, httpx.AsyncClient(base_url=server.http_url, timeout=30) as http:
        started = time.monotonic()
        reply = (
            await http.post("/get_reward", json={"query": ["Q A"], "prompts": ["Q "], "labels": [""]})
        ).json()
        assert time.monotonic() - started < 2.0 + 1.5
        assert reply["rewards"] == [-1.0]
        assert reply["extra_logs"]["status/timeout"] == [1.0]


async def test_v1_score_without_upstreams_says_what_to_configure() -> None:
    async with serve(judge_settings()) as server, httpx.AsyncClient(base_url=server.http_url) as http:
        reply = (await http.post("/v1/score", json={"samples": [{"prompt": "Q", "response": "A"}]})).json()
        (result,) = reply["results"]
        assert result["status"] == "UPSTREAM_ERROR" and "judge_proxy.upstreams" in result["detail"]
        assert reply["grader"]["name"] == "judge"
