"""Group-aware recipes against reference implementations, through gRPC, /v1/score and /get_reward."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from arbiter.client import ArbiterClient
from arbiter.contract import Result, Sample
from services import catalog
from services.gateway.group_terms import GROUP_LOG_KEYS, majority
from services.scoring.formula import Formula, FormulaError
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.gateway import group_reference as ref

SHAPES = ("mixed", "equal", "dups")


def gateway_settings(**gateway: Any) -> ArbiterSettings:
    return ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": 0,
                "recipes": {"default": {"components": {"math": {"grader": "math"}}}, **ref.recipes()},
                **gateway,
            },
            "cache": {"backend": "memory"},
        }
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def gateway() -> AsyncIterator[GraderServer]:
    async with catalog.make_server("gateway", gateway_settings(group_hold_s=30.0)) as server:
        yield server


def cases(seed: int) -> list[tuple[str, int, str, ref.Case]]:
    """(design, size, shape, case) for every design, size and shape."""
    rng = random.Random(seed)
    out = []
    for design in ref.DESIGNS:
        for size in ref.SIZES:
            for shape in SHAPES:
                out.append((design, size, shape, ref.generate(rng, size, f"{design}-{size}-{shape}", shape)))
    return out


def samples_of(design: str, size: int, case: ref.Case) -> list[Sample]:
    return [Sample(prompt=case.prompt, response=r, label=ref.label(design, size)) for r in case.responses]


def check(design: str, case: ref.Case, results: list[Result], where: str) -> None:
    want = ref.expected(design, case)
    got = [r.reward for r in results]
    assert got == pytest.approx(want, abs=1e-9), (where, design, case, [r.detail for r in results])
    for result in results:
        assert result.logs["group/incomplete"] == 0.0 and result.logs["group/grouped"] == 1.0
        for key, value in ref.stats(case).items():
            if design != "ttrl":  # ttrl's accuracy is agreement with the majority
                assert result.logs[key] == pytest.approx(value), (where, key)
        assert set(GROUP_LOG_KEYS) <= set(result.logs)


# -- the pure parts --------------------------------------------------------------------


def test_group_names_in_formulas() -> None:
    formula = Formula("a + ratio(len - group.min_len, group.max_len - group.min_len, 0.5)", None)
    assert formula.names == {"a", "len", "group.min_len", "group.max_len"}
    values = {"a": 1.0, "len": 5.0, "group.min_len": 5.0, "group.max_len": 5.0}
    assert formula(values) == 1.5  # a zero span is the default, not a division error
    assert formula({**values, "group.max_len": 15.0}) == 1.0
    with pytest.raises(FormulaError):
        Formula("group.min_len", {"len"})
    with pytest.raises(FormulaError):
        Formula("(1).real", None)  # only names joined by dots
    with pytest.raises(FormulaError):
        Formula("group.__class__()", None)


@pytest.mark.parametrize("seed", range(30))
def test_majority_matches_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    answers = [rng.choice(["", "1", "2", "3"]) for _ in range(rng.randint(1, 16))]
    assert majority(answers).answer == ref.majority_answer(answers)


# -- through the transports ------------------------------------------------------------


async def test_whole_groups_over_v1_score_and_grpc(gateway: GraderServer) -> None:
    client = ArbiterClient(grpc_target=gateway.grpc_target)
    try:
        async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
            for design, size, shape, case in cases(1):
                samples = samples_of(design, size, case)
                reply = await client.score(samples, timeout_s=30)
                check(design, case, reply.results, f"grpc {shape}")
                response = await http.post(
                    "/v1/score", json={"samples": [s.model_dump() for s in samples], "timeout_s": 30}
                )
                assert response.status_code == 200
                results = [Result.model_validate(r) for r in response.json()["results"]]
                check(design, case, results, f"/v1/score {shape}")
    finally:
        await client.aclose()


async def get_reward(http: httpx.AsyncClient, prompt: str, response: str, label: str) -> dict[str, Any]:
    body = {"query": [prompt + response], "prompts": [prompt], "labels": [label]}
    reply = await http.post("/get_reward", json=body)
    assert reply.status_code == 200
    data: dict[str, Any] = reply.json()
    return data


async def test_one_sample_per_request_over_get_reward(gateway: GraderServer) -> None:
    """Every member in its own request, all at once and in a shuffled order: answered together."""
    rng = random.Random(7)
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=60) as http:
        for design, size, _, case in cases(2):
            order = list(range(size))
            rng.shuffle(order)
            replies = await asyncio.gather(
                *(get_reward(http, case.prompt, case.responses[i], ref.label(design, size)) for i in order)
            )
            rewards = [0.0] * size
            for i, data in zip(order, replies, strict=True):
                rewards[i] = data["rewards"][0]
                assert data["extra_logs"]["group/incomplete"] == [0.0]
                assert all(math.isfinite(v[0]) for v in data["extra_logs"].values())
            assert rewards == pytest.approx(ref.expected(design, case), abs=1e-9), (design, case)
            assert len({frozenset(r["extra_logs"]) for r in replies}) == 1


async def test_a_group_that_never_completes_is_answered_in_time_flagged() -> None:
    settings = gateway_settings(group_hold_s=0.5)
    async with (
        catalog.make_server("gateway", settings) as server,
        httpx.AsyncClient(base_url=server.http_url, timeout=30) as http,
    ):
        await get_reward(http, "warm-up", "\\boxed{1}", "1")  # the math pool is up before the clock runs
        case = ref.generate(random.Random(3), 8, "partial")
        replies = await asyncio.gather(
            *(get_reward(http, case.prompt, r, ref.label("kimi_length", 8)) for r in case.responses[:5])
        )
        for data, want in zip(replies, ref.per_sample("kimi_length", case)[:5], strict=True):
            assert data["extra_logs"]["group/incomplete"] == [1.0]
            assert data["rewards"] == [want]  # the per-sample reward: group terms left out
        # The late members complete the group: they get the full answer, computed over all 8.
        late = await asyncio.gather(
            *(get_reward(http, case.prompt, r, ref.label("kimi_length", 8)) for r in case.responses[5:])
        )
        assert [d["rewards"][0] for d in late] == pytest.approx(ref.kimi(case)[5:])
        assert all(d["extra_logs"]["group/incomplete"] == [0.0] for d in late)


async def test_samples_of_no_group_recipe_are_not_held(gateway: GraderServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.http_url, timeout=30) as http:
        data = await get_reward(http, "Q", "\\boxed{42}", "42")
    assert data["rewards"] == [1.0]
    assert data["extra_logs"]["group/grouped"] == [0.0] and data["extra_logs"]["group/incomplete"] == [0.0]


async def test_waiting_samples_are_bounded_and_forgotten() -> None:
    """Beyond `group_max_waiting` a sample is answered at once, incomplete; groups that never
    complete are forgotten after `group_keep_s`, so the table does not grow with them."""
    settings = gateway_settings(group_hold_s=0.3, group_max_waiting=3, group_keep_s=0.5)
    async with (
        catalog.make_server("gateway", settings) as server,
        httpx.AsyncClient(base_url=server.http_url, timeout=30) as http,
    ):
        groups = server.engine.groups  # type: ignore[attr-defined]
        case = ref.generate(random.Random(5), 8, "bounded")
        replies = await asyncio.gather(
            *(get_reward(http, case.prompt, r, ref.label("kimi_length", 8)) for r in case.responses[:6])
        )
        assert all(d["extra_logs"]["group/incomplete"] == [1.0] for d in replies)
        assert groups.waiting == 3
        await asyncio.sleep(0.6)  # past group_keep_s: the next arrival sweeps the stale group away
        other = ref.generate(random.Random(6), 8, "next")
        await get_reward(http, other.prompt, other.responses[0], ref.label("kimi_length", 8))
        assert groups.waiting == 1 and len(groups.open) == 1
