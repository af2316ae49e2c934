"""Fixtures of the judge tests: fake chat-completions servers on loopback, graders built on them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from services.judge_proxy.grader import JudgeGrader
from services.judge_proxy.service import build_grader
from services.judge_proxy.settings import JudgeServiceSettings
from tests.judge_proxy.fake_openai import FakeOpenAI


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def backup() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(model="backup-judge") as server:
        yield server


def judge_settings(
    *fakes: FakeOpenAI, upstream: dict[str, Any] | None = None, **overrides: Any
) -> JudgeServiceSettings:
    """Settings on port 0 with one upstream per fake, in order (names u0, u1, ...)."""
    upstreams = [
        {"name": f"u{i}", "base_url": f.url, "model": f.model, **(upstream or {})}
        for i, f in enumerate(fakes)
    ]
    base: dict[str, Any] = {
        "host": "127.0.0.1",
        "http_port": 0,
        "grpc_port": -1,
        "deadline_s": 10.0,
        "upstreams": upstreams,
        "retry": {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "cooldown_s": 30.0},
    }
    base.update(overrides)
    return JudgeServiceSettings.model_validate(base)


@pytest.fixture
async def make_grader() -> AsyncIterator[Callable[..., JudgeGrader]]:
    built: list[JudgeGrader] = []

    def make(*fakes: FakeOpenAI, **overrides: Any) -> JudgeGrader:
        grader = build_grader(judge_settings(*fakes, **overrides))
        built.append(grader)
        return grader

    yield make
    for grader in built:
        await grader.aclose()
