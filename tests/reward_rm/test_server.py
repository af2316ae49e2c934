"""The RM grader served by the kit: OpenRLHF's one-sample POSTs and /v1/score, on loopback."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from arbiter.client import ArbiterClient
from arbiter.contract import Sample, Status
from services.reward_rm.checkpoint import CheckpointError
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings
from services.transports.server import GraderServer
from testkit.tiny_checkpoints import TinyCheckpoints, sentence
from tests.reward_rm.reference import EOS, Reference, openrlhf_text

CHATML_PROMPT = "<s><|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def rm_settings(**overrides: object) -> RMServiceSettings:
    return RMServiceSettings.model_validate(
        {"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, **overrides}
    )


async def test_openrlhf_one_sample_posts_get_reference_rewards(tiny: TinyCheckpoints) -> None:
    ref = Reference(tiny.openrlhf, tiny.mean, tiny.std, normalize=True)
    rng = random.Random(3)
    bodies, expected = [], []
    for i in range(48):
        prompt = CHATML_PROMPT.format(q=sentence(rng, rng.randint(2, 12)))
        response = sentence(rng, rng.choice([2, 8, 30, 90]))
        stopped = i % 3 != 0
        query = prompt + response + (EOS if stopped else "")
        bodies.append({"query": [query], "prompts": [prompt], "labels": [""]})
        expected.append(ref.reward(openrlhf_text(query)))

    settings = rm_settings(checkpoint=str(tiny.openrlhf))
    async with (
        GraderServer("reward_rm", RMGrader(settings), settings) as server,
        httpx.AsyncClient(base_url=server.http_url, timeout=60) as http,
    ):
        replies = await asyncio.gather(*(http.post("/get_reward", json=body) for body in bodies))
        metrics = (await http.get("/metrics")).text
    for reply, want in zip(replies, expected, strict=True):
        assert reply.status_code == 200
        data = reply.json()
        assert abs(data["rewards"][0] - want) < 1e-5
        assert data["scores"] == data["rewards"]
        logs = data["extra_logs"]
        assert logs["status/ok"] == [1.0] and logs["rm/truncated"] == [0.0] and logs["rm/tokens"][0] > 0
    # The micro-batcher coalesced the concurrent one-sample requests into fewer forwards.
    batch_count = next(
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("arbiter_batch_size_count")
    )
    assert batch_count < len(bodies)


async def test_v1_score_applies_the_template_and_flags_truncation(tiny: TinyCheckpoints) -> None:
    ref = Reference(tiny.hf)
    settings = rm_settings(checkpoint=str(tiny.hf), max_length=32)
    short = Sample(prompt="is two plus two four", response="yes")
    long = Sample(prompt="count", response="two plus two is four " * 20)
    async with (
        GraderServer("reward_rm", RMGrader(settings), settings) as server,
        ArbiterClient(grpc_target=server.grpc_target) as client,
    ):
        response = await client.score([short, long])
    assert response.grader.name == "rm"
    first, second = response.results
    assert abs(first.reward - ref.reward(ref.chat_text(short.prompt, short.response))) < 1e-5
    assert first.logs["rm/templated"] == 1.0 and first.logs["rm/truncated"] == 0.0
    full = ref.ids(ref.chat_text(long.prompt, long.response))
    assert second.status is Status.OK and second.logs["rm/truncated"] == 1.0
    assert second.logs["rm/tokens"] == len(full) and "truncated to 32" in second.detail
    # The prompt and the end of the turn stay; the response loses its middle.
    template = ref.chat_text(long.prompt, "\ue000")
    before, after = template.split("\ue000")
    prefix, suffix, body = ref.ids(before), ref.ids(after), ref.ids(long.response)
    room = 32 - len(prefix) - len(suffix)
    kept = body[: (room + 1) // 2] + body[len(body) - room // 2 :]
    assert second.logs["rm/dropped_tokens"] == len(body) - room
    assert abs(second.reward - ref.reward_of_ids(prefix + kept + suffix)) < 1e-5


async def test_without_a_checkpoint_the_service_refuses_to_start_and_says_why() -> None:
    settings = rm_settings()
    with pytest.raises(CheckpointError, match=r"reward_rm\.checkpoint is not set"):
        async with GraderServer("reward_rm", RMGrader(settings), settings):
            pass
    # Used without start (offline scoring), every sample fails with the reason, none is dropped.
    results = await RMGrader(settings).score([Sample(response="a"), Sample(response="b")])
    assert [r.status for r in results] == [Status.GRADER_ERROR] * 2
    assert "reward_rm.checkpoint is not set" in results[0].detail
