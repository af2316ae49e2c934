"""Every call for an episode reaches the worker process that holds it.

With `workers: N` the kernel spreads connections over N processes (SO_REUSEPORT), and an
episode's interpreter lives in one of them. Each episode therefore has an owner, fixed by its
id (a stable hash modulo N); a start, step or finish that arrives at another worker is handed
to the owner over the fleet's unix sockets (services/common/fleet.py) and its answer passed
back unchanged. So any client works, one connection per call included, and a retried call
still meets the stored answer. An owner that does not answer (killed, restarting) gives a
flagged failure, `episode/lost` = 1, for its own episodes only.

Replicas behind a load balancer have no such link: route by `episode_id` there.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import orjson
from pydantic import BaseModel

from arbiter.contract import (
    EpisodeFinishRequest,
    EpisodeFinishResponse,
    EpisodeStartRequest,
    EpisodeStartResponse,
    EpisodeStepRequest,
    EpisodeStepResponse,
    Status,
)
from services.common.fleet import FleetScope
from services.episodes.manager import EpisodeManager

log = logging.getLogger(__name__)

Q = TypeVar("Q", bound=BaseModel)
A = TypeVar("A", bound=BaseModel)


def owner_of(episode_id: str, workers: int) -> int:
    """The worker index that holds `episode_id`: the same in every process, run after run."""
    digest = hashlib.blake2b(episode_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % workers


class EpisodeRouter:
    """The episode calls of one worker: its own episodes here, the others' at their owner."""

    def __init__(self, manager: EpisodeManager, fleet: FleetScope | None, timeout_s: float) -> None:
        self.manager = manager
        self.fleet = fleet if fleet is not None and fleet.size > 1 else None
        self.timeout_s = timeout_s
        if self.fleet is not None:
            self.fleet.serve("episodes/start", _served(EpisodeStartRequest, manager.start))
            self.fleet.serve("episodes/step", _served(EpisodeStepRequest, manager.step))
            self.fleet.serve("episodes/finish", _served(EpisodeFinishRequest, manager.finish))
            self.fleet.provide("episodes/stats", lambda: orjson.dumps(manager.stats()))

    def _elsewhere(self, episode_id: str) -> int | None:
        if self.fleet is None:
            return None
        owner = owner_of(episode_id, self.fleet.size)
        return None if owner == self.fleet.index else owner

    async def _forward(self, owner: int, name: str, request: BaseModel, answer: type[A]) -> A | str:
        assert self.fleet is not None
        payload = orjson.dumps(request.model_dump(mode="json"))
        reply = await self.fleet.call(owner, f"episodes/{name}", payload, self.timeout_s)
        if not reply:
            return f"worker {owner}, which holds episode ids like this one, did not answer"
        try:
            return answer.model_validate_json(reply)
        except ValueError:
            log.exception("worker %d answered episodes/%s with a malformed reply", owner, name)
            return f"worker {owner} answered malformed"

    async def start(self, request: EpisodeStartRequest) -> EpisodeStartResponse:
        owner = self._elsewhere(request.episode_id)
        if owner is None:
            return await self.manager.start(request)
        answer = await self._forward(owner, "start", request, EpisodeStartResponse)
        if isinstance(answer, str):
            return EpisodeStartResponse(
                episode_id=request.episode_id, status=Status.GRADER_ERROR, detail=answer
            )
        return answer

    async def step(self, request: EpisodeStepRequest) -> EpisodeStepResponse:
        owner = self._elsewhere(request.episode_id)
        if owner is None:
            return await self.manager.step(request)
        answer = await self._forward(owner, "step", request, EpisodeStepResponse)
        return self.manager.lost_step(request, answer) if isinstance(answer, str) else answer

    async def finish(self, request: EpisodeFinishRequest) -> EpisodeFinishResponse:
        owner = self._elsewhere(request.episode_id)
        if owner is None:
            return await self.manager.finish(request)
        answer = await self._forward(owner, "finish", request, EpisodeFinishResponse)
        return self.manager.lost_finish(request, answer) if isinstance(answer, str) else answer

    async def stats(self) -> dict[str, float]:
        """Counts over every worker that answers; `workers` says how many did."""
        if self.fleet is None:
            return {**self.manager.stats(), "workers": 1.0}
        gathered = await self.fleet.gather("episodes/stats")
        total: dict[str, float] = {}
        for part in gathered.parts:
            for key, value in orjson.loads(part).items():
                total[key] = total.get(key, 0.0) + float(value)
        return {**total, "workers": float(len(gathered.parts))}


def _served(request: type[Q], call: Callable[[Q], Awaitable[A]]) -> Callable[[bytes], Awaitable[bytes]]:
    """A manager call as the fleet serves it: JSON in, JSON out."""

    async def serve(payload: bytes) -> bytes:
        answer = await call(request.model_validate_json(payload))
        return orjson.dumps(answer.model_dump(mode="json"))

    return serve
