"""Red-team probes of the group-aware rewards, through the public API (/get_reward, /v1/score, gRPC).

Each probe is what a policy that learns whatever gets paid, or a trainer that must never hang or
crash, would run into: wrong answers paid through a group term, one group's samples counted in
another's, garbage metadata, a judge outage turned into silent neutral rewards, an unbounded
number of pairwise judge calls, held samples dropped at shutdown.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

import httpx
import pytest

from arbiter.client import ArbiterClient
from arbiter.contract import Result, Sample
from services import catalog
from services.gateway.group_recipes import preset
from services.gateway.group_terms import GROUP_LOG_KEYS
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.gateway import group_reference as ref
from tests.gateway.test_group import gateway_settings, get_reward
from tests.judge_proxy.fake_openai import FakeOpenAI, directive


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def gateway() -> AsyncIterator[GraderServer]:
    # Holds long enough that a sample's sibling, graded at the same time, always meets it.
    async with catalog.make_server("gateway", gateway_settings(group_hold_s=5.0)) as server:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as http:
            await get_reward(http, "warm-up", "\\boxed{1}", "1")  # the math pool is up
        yield server


async def v1_score(http: httpx.AsyncClient, samples: list[Sample]) -> list[Result]:
    reply = await http.post("/v1/score", json={"samples": [s.model_dump() for s in samples], "timeout_s": 30})
    assert reply.status_code == 200, reply.text
    return [Result.model_validate(r) for r in reply.json()["results"]]


# -- a wrong answer is never paid ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
async def test_no_group_term_pays_a_wrong_answer_above_a_right_one(gateway: GraderServer, seed: int) -> None:
    """Over generated groups (empty answers, all-equal lengths, duplicates, size 1): in each group,
    every wrong member's reward is <= 0 and below every right member's."""
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        for design in ("kimi_length", "dedup", "group_stats"):
            for size in (1, 2, 5, 16):
                shape = rng.choice(("mixed", "equal", "dups"))
                case = ref.generate(rng, size, f"rt-{seed}-{design}-{size}", shape)
                responses = list(case.responses)
                answers = list(case.answers)
                if size > 1:  # an empty response in the group: the shortest, never paid
                    responses[0], answers[0] = "", ""
                samples = [
                    Sample(prompt=case.prompt, response=r, label=ref.label(design, size)) for r in responses
                ]
                results = await v1_score(http, samples)
                right = [r.reward for r, a in zip(results, answers, strict=True) if a == ref.REFERENCE]
                wrong = [r.reward for r, a in zip(results, answers, strict=True) if a != ref.REFERENCE]
                assert all(w <= 0.0 for w in wrong), (design, shape, wrong)
                assert not right or not wrong or max(wrong) < min(right), (design, shape, right, wrong)
                assert all(set(GROUP_LOG_KEYS) <= set(r.logs) for r in results)


# -- groups stay apart ----------------------------------------------------------------------


async def test_a_group_id_does_not_meet_a_prompt_in_datasource_id(gateway: GraderServer) -> None:
    """`metadata.group_id = P` and a sample of prompt P in datasource "id" are different groups: one
    member of each, in a group of 2, must not complete each other."""
    label = ref.label("kimi_length", 2)
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        a = Sample(prompt="other", response="\\boxed{42}", label=label, metadata={"group_id": "P"})
        b = Sample(
            prompt="P", response="\\boxed{41} and a longer tail", label=label, metadata={"datasource": "id"}
        )
        replies = await asyncio.gather(v1_score(http, [a]), v1_score(http, [b]))
    for (result,) in replies:
        assert result.logs["group/incomplete"] == 1.0, result.detail
    assert replies[0][0].reward == 1.0 and replies[1][0].reward == 0.0


async def test_the_response_never_chooses_the_group(gateway: GraderServer) -> None:
    """The key is the prompt (and datasource), whatever the response holds: responses that look like
    separators, group ids or JSON still land in the prompt's one group."""
    label = ref.label("kimi_length", 3)
    responses = ["\\boxed{42}\x00id\x00x", '{"group_id": "x"} \\boxed{42}', "\\boxed{41}"]
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        replies = await asyncio.gather(*(get_reward(http, "Q sep", r, label) for r in responses))
    assert all(d["extra_logs"]["group/incomplete"] == [0.0] for d in replies)
    assert all(d["extra_logs"]["group/size"] == [3.0] for d in replies)


@pytest.mark.parametrize("stated", ["²", "9" * 5000, "-1", "0", "1e3", " 8", "", "99999"])
async def test_garbage_group_size_is_the_recipe_size(gateway: GraderServer, stated: str) -> None:
    """A `group_size` that is no plain positive count in range is ignored, never an error."""
    label = ref.label("kimi_length", 2)
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        samples = [
            Sample(prompt=f"size {stated[:8]}", response=r, label=label, metadata={"group_size": stated})
            for r in ("\\boxed{42}", "\\boxed{42} longer")
        ]
        results = await v1_score(http, samples)
    assert all(r.logs["group/incomplete"] == 0.0 and r.logs["group/size"] == 2.0 for r in results)
    assert [r.reward for r in results] == pytest.approx([1.5, 0.5])


# -- shutdown ------------------------------------------------------------------------------


async def test_held_samples_are_answered_when_the_gateway_stops() -> None:
    """SIGTERM with samples held for groups that will not complete in time: each held request gets
    its per-sample answer, flagged incomplete, rather than a connection cut at the grace period."""
    settings = gateway_settings(group_hold_s=60.0)
    server = catalog.make_server("gateway", settings)
    await server.start()
    stopped = False
    try:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as http:
            await get_reward(http, "warm-up", "\\boxed{1}", "1")
            label = ref.label("kimi_length", 8)
            held = [
                asyncio.create_task(get_reward(http, "Q stop", f"\\boxed{{42}} {i}", label)) for i in range(3)
            ]
            groups = server.engine.groups  # type: ignore[attr-defined]
            for _ in range(1200):  # until the three are held (graded first)
                if groups.waiting >= 3:
                    break
                await asyncio.sleep(0.05)
            await server.stop()
            stopped = True
            replies = await asyncio.gather(*held)
    finally:
        if not stopped:
            await server.stop()
    for data in replies:
        assert data["rewards"] == [1.0]
        assert data["extra_logs"]["group/incomplete"] == [1.0]


# -- the pairwise judge ------------------------------------------------------------------------


@pytest.fixture
async def judged() -> AsyncIterator[tuple[GraderServer, FakeOpenAI]]:
    async with FakeOpenAI() as fake:
        settings = ArbiterSettings.model_validate(
            {
                "gateway": {
                    "host": "127.0.0.1",
                    "http_port": 0,
                    "grpc_port": 0,
                    "group_hold_s": 30.0,
                    "recipes": {
                        "default": {"components": {"math": {"grader": "math"}}},
                        "pairwise_4": preset("pairwise", 4).model_dump(mode="json"),
                        "pairwise_16": preset("pairwise", 16).model_dump(mode="json"),
                    },
                },
                "judge_proxy": {
                    "upstreams": [{"name": "u0", "base_url": fake.url, "model": fake.model}],
                    "retry": {
                        "max_attempts": 2,
                        "backoff_base_s": 0.01,
                        "backoff_max_s": 0.02,
                        "cooldown_after_failures": 1000,  # an outage fails fast, not cooling down
                    },
                },
                "cache": {"backend": "none"},
            }
        )
        async with catalog.make_server("gateway", settings) as server:
            yield server, fake


def pairwise_label(n: int) -> str:
    return json.dumps({"recipe": f"pairwise_{n}"})


async def test_a_judge_outage_is_flagged_never_a_silent_tie(judged: tuple[GraderServer, FakeOpenAI]) -> None:
    """Every judge call fails: the members are answered (no error), flagged incomplete, with the
    per-sample reward; a neutral 0.5 from failed verdicts must not pass for a judged tie."""
    server, _ = judged
    prompt = f"Question outage {directive(status=500)}"
    samples = [Sample(prompt=prompt, response=f"answer {i}", label=pairwise_label(4)) for i in range(4)]
    client = ArbiterClient(grpc_target=server.grpc_target)
    try:
        reply = await client.score(samples, timeout_s=30)
    finally:
        await client.aclose()
    for result in reply.results:
        assert result.logs["group/incomplete"] == 1.0, result.detail
        assert result.logs["group/failed"] == 1.0
        assert set(GROUP_LOG_KEYS) <= set(result.logs)


async def test_pairwise_judge_calls_are_bounded(judged: tuple[GraderServer, FakeOpenAI]) -> None:
    """A 16-sample group costs its 120 pairs (240 judge requests, both orders); a call that stuffs
    many more members into one group does not cost quadratically more: beyond the bound the
    pairwise terms are left out, flagged, and no judge call is made for them."""
    server, fake = judged
    async with httpx.AsyncClient(base_url=server.http_url, timeout=120) as http:
        prompt = f"Question bound {directive(prefer='GOOD', over='BAD')}"
        samples = [
            Sample(prompt=prompt, response=f"{'GOOD' if i % 2 else 'BAD'} {i}", label=pairwise_label(16))
            for i in range(16)
        ]
        results = await v1_score(http, samples)
        assert fake.count == 240
        assert all(r.logs["group/incomplete"] == 0.0 for r in results)
        fake.reset()
        crowd = [
            Sample(prompt="Question crowd", response=f"answer {i}", label=pairwise_label(4))
            for i in range(200)
        ]
        results = await v1_score(http, crowd)
    assert fake.count == 0
    assert all(r.logs["group/incomplete"] == 1.0 and r.reward == 0.5 for r in results)


async def test_a_whole_group_is_answered_within_the_call_deadline(
    judged: tuple[GraderServer, FakeOpenAI],
) -> None:
    """A whole group over gRPC whose judge never answers: the call is answered inside its own
    deadline (incomplete, the per-sample reward), never a DEADLINE_EXCEEDED for the trainer."""
    server, _ = judged
    prompt = f"Question hang {directive(hang=True)}"
    samples = [Sample(prompt=prompt, response=f"answer {i}", label=pairwise_label(4)) for i in range(4)]
    client = ArbiterClient(grpc_target=server.grpc_target)
    try:
        reply = await client.score(samples, timeout_s=3)
    finally:
        await client.aclose()
    assert all(r.logs["group/incomplete"] == 1.0 and r.reward == 0.5 for r in reply.results)


# -- retries ---------------------------------------------------------------------------------


async def test_a_retry_after_a_hang_up_is_counted_once(gateway: GraderServer) -> None:
    """A client gives up on a held sample and retries it: the retry takes the sample's place, the
    group completes with its true size, and the retry gets the full answer."""
    label = ref.label("kimi_length", 3)
    prompt = "Q retry"
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        body = {"query": [prompt + "\\boxed{42}"], "prompts": [prompt], "labels": [label]}
        with pytest.raises(httpx.TimeoutException):
            await http.post("/get_reward", json=body, timeout=0.3)  # hangs up while held
        replies = await asyncio.gather(
            get_reward(http, prompt, "\\boxed{42}", label),  # the retry
            get_reward(http, prompt, "\\boxed{42} and more", label),
            get_reward(http, prompt, "\\boxed{41}", label),
        )
    for data in replies:
        assert data["extra_logs"]["group/incomplete"] == [0.0]
        assert data["extra_logs"]["group/size"] == [3.0]
    assert [d["rewards"][0] for d in replies] == pytest.approx([1.5, 0.5, 0.0])


async def test_a_huge_claimed_group_size_holds_no_sample_past_its_hold(gateway: GraderServer) -> None:
    """`group_size: 4096` on one sample: it is answered at its hold deadline with its own reward,
    incomplete, and its recipe's other groups are untouched."""
    label = ref.label("kimi_length", 2)
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        big = Sample(prompt="Q huge", response="\\boxed{42}", label=label, metadata={"group_size": "4096"})
        honest = [
            Sample(prompt="Q honest", response=r, label=label) for r in ("\\boxed{42}", "\\boxed{42}!!")
        ]
        (held,), first, second = await asyncio.gather(
            v1_score(http, [big]), v1_score(http, honest[:1]), v1_score(http, honest[1:])
        )
    assert held.reward == 1.0 and held.logs["group/incomplete"] == 1.0
    assert [first[0].reward, second[0].reward] == pytest.approx([1.5, 0.5])
    assert first[0].logs["group/incomplete"] == second[0].logs["group/incomplete"] == 0.0


async def test_an_empty_response_is_a_vote_for_nothing_not_a_stage_failure(gateway: GraderServer) -> None:
    """TTRL with an empty or unreadable response in the group: that member has no vote, the
    others' majority still pays them (the group stage did not fail)."""
    label = ref.label("ttrl", 4)
    responses = ["", "\\boxed{42}", "The answer is \\boxed{42}.", "\x00\ud7ff \\boxed{}"]
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        results = await v1_score(http, [Sample(prompt="Q empty", response=r, label=label) for r in responses])
    assert [r.reward for r in results] == [0.0, 1.0, 1.0, 0.0], [r.detail for r in results]
    assert all(r.logs["group/incomplete"] == 0.0 and r.logs["group/failed"] == 0.0 for r in results)
