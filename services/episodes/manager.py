"""Open episodes of one process: caller-named, idempotent, bounded, expiring.

- Ids are the caller's. A start retried with the same fields answers as the first did; a step is
  named by (episode_id, turn): the same turn again answers the stored reply (the tool never runs
  twice, even when the retry arrives while the first call still runs); a finish retried answers
  the same final reward.
- At most `max_episodes` open; a start past it answers OVERLOADED (flagged), after expired
  episodes were freed. Each episode's own work runs shielded from its caller: a client that hangs
  up mid-step does not leave a half-run tool (its retry gets the finished answer).
- An episode untouched for `idle_ttl_s`, or older than `max_lifetime_s` (a policy that never
  answers), expires: its interpreter is freed. Finished and expired ids are remembered (up to
  `remembered`), so a late retry gets the stored answer, or a flagged failure saying what
  happened. An id this process never held (another worker or replica has it, or it was lost in a
  restart) answers GRADER_ERROR with `episode/lost` = 1: never a silent zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from arbiter.contract import (
    EpisodeFinishRequest,
    EpisodeFinishResponse,
    EpisodeStartRequest,
    EpisodeStartResponse,
    EpisodeStepRequest,
    EpisodeStepResponse,
    Status,
)
from services.episodes.environments import (
    COUNTERS,
    FLAGS,
    Environment,
    EnvironmentContext,
    EnvironmentFactory,
)
from services.episodes.settings import EpisodeSettings

log = logging.getLogger(__name__)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _step_digest(request: EpisodeStepRequest) -> bytes:
    """What a retry must repeat: the action, and its structured tool calls or final mark."""
    if not request.tool_code and not request.final:
        return _digest(request.action)
    return _digest(json.dumps([request.action, request.tool_code, request.final]))


@dataclass(eq=False)
class Episode:
    request: EpisodeStartRequest
    environment: Environment
    start: EpisodeStartResponse
    created: float
    touched: float
    steps: list[tuple[bytes, EpisodeStepResponse]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reward: float = 0.0
    score: float = 0.0
    done: bool = False
    failed: bool = False
    running: asyncio.Task[EpisodeStepResponse] | None = None


@dataclass(frozen=True)
class Remembered:
    """A closed episode: how it ended, its last step (a retry of it) and its final answer. Only
    the last step: the one a caller may still be retrying, in bounded memory per closed id."""

    reason: str  # "finished" or "expired"
    last_turn: list[tuple[bytes, EpisodeStepResponse]]  # as Episode.steps, the last one only
    first_turn: int
    finish: EpisodeFinishResponse


class EpisodeManager:
    def __init__(
        self,
        settings: EpisodeSettings,
        environments: Mapping[str, EnvironmentFactory],
        context: EnvironmentContext,
        trajectory_keys: tuple[str, ...] = (),
    ) -> None:
        self.settings = settings
        self.environments = dict(environments)
        self.context = context
        self.open: dict[str, Episode] = {}
        self.closed: OrderedDict[str, Remembered] = OrderedDict()
        self.trajectory_keys = trajectory_keys  # emergence keys, prefixed trajectory/
        self.log_keys = (*COUNTERS, *FLAGS, *(f"trajectory/{k}" for k in trajectory_keys))
        self.expired = 0
        self.started = self.stepped = self.finished = 0
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False

    # ---- logs ----

    def _logs(self, episode: Episode | None, lost: bool = False, failed: bool = False) -> dict[str, float]:
        logs = dict.fromkeys(self.log_keys, 0.0)
        if episode is not None:
            logs.update(episode.environment.tally.values)
            if self.trajectory_keys and episode.environment.actions:
                stats = self.context.emergence.compute("\n".join(episode.environment.actions))
                logs.update({f"trajectory/{k}": stats.get(k, 0.0) for k in self.trajectory_keys})
        logs["episode/lost"] = 1.0 if lost else 0.0
        logs["episode/failed"] = 1.0 if failed or (episode is not None and episode.failed) else 0.0
        return logs

    def _lost_detail(self, episode_id: str) -> str:
        known = self.closed.get(episode_id)
        if known is not None and known.reason == "expired":
            return f"episode {episode_id!r} expired (idle over {self.settings.idle_ttl_s:g} s or too old)"
        return (
            f"episode {episode_id!r} is not held here: never started on this replica/worker, lost in a "
            "restart, or forgotten long after it closed"
        )

    # ---- start ----

    @staticmethod
    def _start_digest(request: EpisodeStartRequest) -> bytes:
        return _digest(request.model_dump_json(exclude={"episode_id"}))

    async def start(self, request: EpisodeStartRequest) -> EpisodeStartResponse:
        episode_id = request.episode_id
        held = self.open.get(episode_id)
        if held is not None:
            if self._start_digest(held.request) == self._start_digest(request):
                held.touched = time.monotonic()
                return held.start  # a retried start
            return self._refused(request, Status.INVALID_INPUT, "episode id already in use by another start")
        if episode_id in self.closed:
            return self._refused(
                request, Status.INVALID_INPUT, f"episode {episode_id!r} already ran and closed"
            )
        factory = self.environments.get(request.environment)
        if factory is None:
            known = ", ".join(sorted(self.environments))
            return self._refused(request, Status.INVALID_INPUT, f"unknown environment; available: {known}")
        if self._closing:
            return self._refused(request, Status.OVERLOADED, "the service is shutting down")
        if len(self.open) >= self.settings.max_episodes:
            await self.expire()
            if len(self.open) >= self.settings.max_episodes:
                limit = self.settings.max_episodes
                return self._refused(request, Status.OVERLOADED, f"{limit} episodes open (max_episodes)")
        environment = factory(self.context, request)
        try:
            observation = await environment.reset()
        except Exception as exc:
            log.exception("episode %r: the environment failed to start", episode_id)
            await environment.close()
            return self._refused(request, Status.GRADER_ERROR, f"the environment failed to start: {exc}")
        if episode_id in self.open:  # a concurrent start of the same id won the race: it stands
            await environment.close()
            return await self.start(request)
        now = time.monotonic()
        response = EpisodeStartResponse(
            episode_id=episode_id, observation=observation, max_turns=environment.max_turns
        )
        self.open[episode_id] = Episode(request, environment, response, now, now)
        self.started += 1
        return response

    @staticmethod
    def _refused(request: EpisodeStartRequest, status: Status, detail: str) -> EpisodeStartResponse:
        return EpisodeStartResponse(episode_id=request.episode_id, status=status, detail=detail)

    # ---- step ----

    def _failure(
        self, request: EpisodeStepRequest, status: Status, detail: str, **flags: bool
    ) -> EpisodeStepResponse:
        return EpisodeStepResponse(
            episode_id=request.episode_id,
            turn=request.turn,
            done=True,
            status=status,
            detail=detail,
            logs=self._logs(None, **flags),
        )

    @staticmethod
    def _stored(
        steps: list[tuple[bytes, EpisodeStepResponse]], request: EpisodeStepRequest
    ) -> EpisodeStepResponse | str | None:
        """The stored reply of a retried turn; a reason when the turn was taken by another action."""
        if request.turn >= len(steps):
            return None
        digest, reply = steps[request.turn]
        if digest != _step_digest(request):
            return f"turn {request.turn} was already taken by a different action"
        return reply

    async def step(self, request: EpisodeStepRequest) -> EpisodeStepResponse:
        episode = self.open.get(request.episode_id)
        if episode is None:
            known = self.closed.get(request.episode_id)
            if known is not None:
                stored = None
                if request.turn == known.first_turn and known.last_turn:
                    renamed = request.model_copy(update={"turn": 0})
                    stored = self._stored(known.last_turn, renamed)
                if isinstance(stored, EpisodeStepResponse):
                    return stored
            status = (
                Status.TIMEOUT if known is not None and known.reason == "expired" else Status.GRADER_ERROR
            )
            return self._failure(request, status, self._lost_detail(request.episode_id), lost=True)
        episode.touched = time.monotonic()
        async with episode.lock:
            running = episode.running
            if running is not None and not running.done():
                # a step whose caller was cancelled (hung up) still runs: its answer is this one's
                await asyncio.shield(running)
            stored = self._stored(episode.steps, request)
            if isinstance(stored, EpisodeStepResponse):
                return stored
            if isinstance(stored, str):
                return self._failure(request, Status.INVALID_INPUT, stored, failed=True)
            if request.turn != len(episode.steps):
                detail = f"turn {request.turn} out of order: the next turn is {len(episode.steps)}"
                return self._failure(request, Status.INVALID_INPUT, detail, failed=True)
            if episode.done:
                return self._failure(
                    request, Status.INVALID_INPUT, "the episode is already done", failed=True
                )
            # Shielded: a caller that hangs up does not cancel a tool half-way; its retry gets this.
            episode.running = asyncio.ensure_future(self._advance(episode, request))
            reply = await asyncio.shield(episode.running)
            episode.touched = time.monotonic()
            return reply

    async def _advance(self, episode: Episode, request: EpisodeStepRequest) -> EpisodeStepResponse:
        try:
            outcome = await episode.environment.step(request.action, request.tool_code, request.final)
        except Exception as exc:  # a bug or a broken sandbox: the episode cannot go on, flagged
            log.exception("episode %r: step %d failed", request.episode_id, request.turn)
            episode.failed = episode.done = True
            reply = EpisodeStepResponse(
                episode_id=request.episode_id,
                turn=request.turn,
                done=True,
                status=Status.GRADER_ERROR,
                detail=f"the environment failed: {type(exc).__name__}: {exc}"[:500],
                logs=self._logs(episode),
            )
        else:
            episode.reward += outcome.reward
            episode.score = outcome.score
            episode.done = outcome.done
            reply = EpisodeStepResponse(
                episode_id=request.episode_id,
                turn=request.turn,
                feedback=outcome.feedback,
                reward=outcome.reward,
                score=outcome.score,
                done=outcome.done,
                status=outcome.status,
                detail=outcome.detail,
                logs=self._logs(episode),
            )
        episode.steps.append((_step_digest(request), reply))
        self.stepped += 1
        return reply

    # ---- finish ----

    async def finish(self, request: EpisodeFinishRequest) -> EpisodeFinishResponse:
        episode = self.open.get(request.episode_id)
        if episode is None:
            known = self.closed.get(request.episode_id)
            if known is not None and known.reason == "finished":
                return known.finish
            return self.lost_finish(request, self._lost_detail(request.episode_id))
        async with episode.lock:
            if self.open.get(request.episode_id) is not episode:  # a concurrent finish closed it
                return await self.finish(request)
            return await self._close(request.episode_id, episode, "finished")

    async def _close(self, episode_id: str, episode: Episode, reason: str) -> EpisodeFinishResponse:
        self.open.pop(episode_id, None)
        self.finished += reason == "finished"
        status, detail = Status.OK, ""
        if episode.failed:
            status, detail = Status.GRADER_ERROR, "the episode failed (see its last step)"
        elif episode.steps:
            last = episode.steps[-1][1]
            status, detail = last.status, last.detail
        if reason == "expired":
            status, detail = Status.TIMEOUT, self._lost_detail(episode_id)
        answer = EpisodeFinishResponse(
            episode_id=episode_id,
            reward=episode.reward,
            score=episode.score,
            turns=len(episode.steps),
            status=status,
            detail=detail,
            logs=self._logs(episode),
        )
        try:
            await episode.environment.close()
        except Exception:
            log.exception("episode %r: freeing its environment failed", episode_id)
        self._remember(
            episode_id, Remembered(reason, episode.steps[-1:], max(len(episode.steps) - 1, 0), answer)
        )
        return answer

    def _remember(self, episode_id: str, record: Remembered) -> None:
        if self.settings.remembered <= 0:
            return
        self.closed[episode_id] = record
        self.closed.move_to_end(episode_id)
        while len(self.closed) > self.settings.remembered:
            self.closed.popitem(last=False)

    # ---- answers for an episode held nowhere that answers ----

    def lost_step(self, request: EpisodeStepRequest, detail: str) -> EpisodeStepResponse:
        return self._failure(request, Status.GRADER_ERROR, detail, lost=True)

    def lost_finish(self, request: EpisodeFinishRequest, detail: str) -> EpisodeFinishResponse:
        return EpisodeFinishResponse(
            episode_id=request.episode_id,
            status=Status.GRADER_ERROR,
            detail=detail,
            logs=self._logs(None, lost=True),
        )

    # ---- expiry and lifecycle ----

    async def expire(self) -> int:
        """Closes episodes idle past idle_ttl_s or older than max_lifetime_s; how many it closed."""
        now = time.monotonic()
        stale = [
            (episode_id, episode)
            for episode_id, episode in self.open.items()
            if now - episode.touched > self.settings.idle_ttl_s
            or now - episode.created > self.settings.max_lifetime_s
        ]
        closed = 0
        for episode_id, episode in stale:
            if episode.lock.locked():  # mid-step: its own deadlines bound it; next round
                continue
            async with episode.lock:
                if self.open.get(episode_id) is episode:
                    await self._close(episode_id, episode, "expired")
                    closed += 1
        self.expired += closed
        return closed

    async def _reap(self) -> None:
        interval = max(min(self.settings.idle_ttl_s, self.settings.max_lifetime_s) / 4, 0.05)
        interval = min(interval, 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.expire()
            except Exception:
                log.exception("episode expiry failed")

    async def start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(), name="episode-reaper")

    async def stop(self) -> None:
        """Closes every open episode (their interpreters freed); new starts are refused."""
        self._closing = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for episode_id, episode in list(self.open.items()):
            if episode.running is not None and not episode.running.done():
                episode.running.cancel()
                with contextlib.suppress(BaseException):
                    await episode.running
            await self._close(episode_id, episode, "expired")

    def stats(self) -> dict[str, float]:
        return {
            "open": float(len(self.open)),
            "remembered": float(len(self.closed)),
            "expired": float(self.expired),
            "started": float(self.started),
            "steps": float(self.stepped),
            "finished": float(self.finished),
        }
