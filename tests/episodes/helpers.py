"""A served grader with episodes, on loopback, for the episode tests."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.episodes.extension import EpisodesExtension, episodes
from services.episodes.settings import EpisodeSettings
from services.scoring.grader import Grader
from services.transports.server import GraderServer
from tests.helpers import server_settings

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


class BoxedGrader:
    """Reward 1 when the response's last \\boxed{} holds the label exactly; counts what it graded."""

    def __init__(self) -> None:
        self.graded: list[str] = []
        self._info = GraderInfo(name="boxed", version="1", config_hash="test")

    @property
    def info(self) -> GraderInfo:
        return self._info

    @property
    def log_keys(self) -> Sequence[str]:
        return ()

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        results = []
        for sample in samples:
            self.graded.append(sample.response)
            found = _BOXED.findall(sample.response)
            right = bool(found) and found[-1].strip() == sample.label.strip()
            results.append(Result(reward=float(right), score=float(right), status=Status.OK))
        return results

    async def aclose(self) -> None:
        return None


def episode_settings(**overrides: Any) -> EpisodeSettings:
    tool = {"cell_time_limit_s": 2.0, "memory_limit_mb": 128, **overrides.pop("python_tool", {})}
    base: dict[str, Any] = {"warm_interpreters": 1, "max_live_interpreters": 8, "python_tool": tool}
    base.update(overrides)
    return EpisodeSettings.model_validate(base)


@asynccontextmanager
async def served(
    settings: EpisodeSettings | None = None, grader: Grader | None = None
) -> AsyncIterator[tuple[GraderServer, httpx.AsyncClient]]:
    server = GraderServer(
        "episodes-test",
        grader if grader is not None else BoxedGrader(),
        server_settings(),
        extensions=[episodes(settings or episode_settings())],
    )
    async with server, httpx.AsyncClient(base_url=server.http_url, timeout=60) as client:
        yield server, client


def extension(server: GraderServer) -> EpisodesExtension:
    (found,) = server.extensions
    assert isinstance(found, EpisodesExtension)
    return found


class Episode:
    """One episode driven over HTTP, turn by turn."""

    def __init__(self, client: httpx.AsyncClient, episode_id: str) -> None:
        self.client = client
        self.id = episode_id
        self.turn = 0

    async def start(
        self, prompt: str = "q", label: str = "42", environment: str = "python_tool", **more: Any
    ) -> dict[str, Any]:
        body = {"episode_id": self.id, "environment": environment, "prompt": prompt, "label": label, **more}
        answer = await self.client.post("/v1/episodes/start", json=body)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def step(self, action: str, turn: int | None = None) -> dict[str, Any]:
        body = {"episode_id": self.id, "turn": self.turn if turn is None else turn, "action": action}
        answer = await self.client.post("/v1/episodes/step", json=body)
        assert answer.status_code == 200, answer.text
        if turn is None:
            self.turn += 1
        return dict(answer.json())

    async def run(self, code: str) -> str:
        reply = await self.step(f"```python\n{code}\n```")
        assert reply["status"] == "OK", reply
        assert not reply["done"], reply
        return str(reply["feedback"])

    async def finish(self) -> dict[str, Any]:
        answer = await self.client.post("/v1/episodes/finish", json={"episode_id": self.id})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())
