"""Fixtures of the judge tests: fake chat-completions servers on loopback, graders built on them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from services.judge_proxy.build import build_grader
from services.judge_proxy.grader import JudgeGrader
from tests.judge_proxy.fake_openai import FakeOpenAI
from tests.judge_proxy.judges import judge_settings


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def backup() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(model="backup-judge") as server:
        yield server


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
