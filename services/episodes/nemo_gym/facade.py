"""The NeMo-Gym resources server's logic: seed a session, run its tool calls, verify, close.

/verify answers what NeMo-Gym's `BaseVerifyResponse` holds (the request echoed, plus `reward`)
and what NeMo-RL reads to drop a rollout from the gradient (`mask_sample`), plus Arbiter's own
fields: `arbiter_status`, `arbiter_detail`, `arbiter_score`, `arbiter_logs`. The service's values
of these fields replace whatever the request carried under the same names, so a caller cannot
forge its reward or unmask a sample.

The reward is the serving engine's grade of the final assistant text with the row's label (the
service's graders, routing, recipes and cache; reading.py says which fields carry what). Infra
failures are masked, never a silent zero: a grade that is not OK (timeout, grader or upstream
error, overload, a label the grader rejects, no label at all), a session whose episode failed to
start or whose tool call failed in the service, or a tool session this process does not hold.
What the policy's output causes (a wrong or garbage answer, no answer, a failing program) is a
verdict: reward as graded, `mask_sample` false.

Tools: a session seeded for an environment (`python_tool`) holds an episode; NeMo-Gym's agent
calls the tool as POST /<tool_name> {"code": ...} with the session's cookie, and the code runs in
the episode's persistent interpreter (its limits, sandbox and idempotent turns). /verify finishes
the episode and reports its tool logs in `arbiter_logs`; the reward stays the final answer's grade
(episode shaping does not apply).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from arbiter.contract import (
    EpisodeFinishRequest,
    EpisodeStartRequest,
    EpisodeStepRequest,
    Result,
    Sample,
    Status,
)
from services.episodes.manager import EpisodeManager
from services.episodes.nemo_gym import reading
from services.episodes.nemo_gym.sessions import Session, SessionStore
from services.episodes.nemo_gym.settings import NemoGymSettings

log = logging.getLogger(__name__)

Grade = Callable[[Sample], Awaitable[Result]]

# The fields the service sets on every verify answer; a request's values for them are replaced.
OWN_FIELDS = ("reward", "mask_sample", "arbiter_status", "arbiter_detail", "arbiter_score", "arbiter_logs")
SPENT = "The tool budget of this episode is spent: give your final answer now."


class ToolError(Exception):
    """A tool call the service cannot take (no session): an HTTP 400 with this message."""


class NemoGymFacade:
    def __init__(
        self,
        settings: NemoGymSettings,
        manager: EpisodeManager,
        grade: Grade,
        failure_reward: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.manager = manager
        self.grade = grade
        self.failure_reward = failure_reward
        self.sessions = SessionStore(settings.max_sessions, settings.session_idle_ttl_s)
        self._background: set[asyncio.Task[None]] = set()

    # ---- sessions ----

    async def seed(self, session_id: str | None, body: Mapping[str, Any]) -> tuple[Session, dict[str, Any]]:
        """The rollout's session (a retried seed keeps it), its episode started when the row or
        the settings name an environment. A failure to start is kept for /verify to mask."""
        session = self.sessions.get(session_id)
        if session is None:
            session, dropped = self.sessions.new()
            self._finish_later(dropped)
        environment = reading.read_environment(body, self.settings.environment)
        if environment and not session.episode_id and session.failure is None:
            episode_id = f"nemo-gym/{session.id}"
            params = body.get("responses_create_params")
            grader = reading.read_grader(body)
            request = EpisodeStartRequest(
                episode_id=episode_id,
                environment=environment,
                prompt=reading.read_prompt(params if isinstance(params, Mapping) else {}),
                label=reading.read_label(body) or "",
                metadata={"grader": grader} if grader else {},
            )
            started = await self.manager.start(request)
            if started.status is Status.OK:
                session.episode_id = episode_id
                session.max_turns = started.max_turns
            else:
                session.fail(started.status, f"the session's episode did not start: {started.detail}")
        status, detail = session.failure or (Status.OK, "")
        return session, {"arbiter_status": status.value, "arbiter_detail": detail}

    async def close(self, session_id: str | None) -> dict[str, Any]:
        """Forgets the session and finishes its episode (frees its interpreter); idempotent."""
        session = self.sessions.pop(session_id)
        if session is not None and session.episode_id:
            async with session.lock:
                await self.manager.finish(EpisodeFinishRequest(episode_id=session.episode_id))
        return {}

    async def stop(self) -> None:
        self._finish_later(self.sessions.drain())
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    def _finish_later(self, dropped: Iterable[Session]) -> None:
        for session in dropped:
            if session.episode_id:
                task = asyncio.create_task(self._finish_quietly(session.episode_id))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _finish_quietly(self, episode_id: str) -> None:
        try:
            await self.manager.finish(EpisodeFinishRequest(episode_id=episode_id))
        except Exception:
            log.exception("finishing the episode %r of a dropped NeMo-Gym session failed", episode_id)

    # ---- the tool ----

    async def tool(self, session_id: str | None, arguments: Any) -> dict[str, Any]:
        """The tool's answer, which NeMo-Gym's agent hands to the policy as the call's output."""
        session = self.sessions.get(session_id)
        if session is None:
            detail = "no session held here: call /seed_session first and send its cookie"
            if session_id:
                detail = "the session is not held here (expired, another worker, or a restart)"
            raise ToolError(detail)
        if not session.episode_id:
            if session.failure is not None:
                return {"output": f"error: the tool is unavailable: {session.failure[1]}"}
            raise ToolError("this session has no episode: seed it with an `environment` (python_tool)")
        code = arguments.get("code") if isinstance(arguments, Mapping) else None
        if not isinstance(code, str):
            return {"output": 'error: the tool takes {"code": "<python source>"}'}
        if not code.strip():
            return {"output": "error: the code is empty"}
        async with session.lock:
            if session.max_turns and session.turn + 1 >= session.max_turns:
                session.done = True  # the episode's last turn is its final answer: kept for /verify
            if session.done:
                return {"output": SPENT}
            # the code as one cell, run as given (not searched for fences or tags)
            request = EpisodeStepRequest(
                episode_id=session.episode_id, turn=session.turn, action=code, tool_code=[code]
            )
            try:
                step = await self.manager.step(request)
            except Exception as exc:  # the manager answers failures; this is a bug, still masked
                log.exception("NeMo-Gym tool call in episode %r", session.episode_id)
                session.fail(Status.GRADER_ERROR, f"the tool call failed in the service: {exc}")
                return {"output": "error: the tool failed in the service"}
            session.turn += 1
            if step.status is not Status.OK:
                session.fail(step.status, f"a tool call failed in the service: {step.detail}")
                session.done = True
                return {"output": f"error: the tool failed in the service: {step.detail}"}
            if step.done:  # the episode ended (a limit of its own): it took the call as its answer
                session.done = True
                return {"output": SPENT}
            session.tool_calls += 1
            return {"output": step.feedback}

    # ---- verify ----

    def _failed(self, status: Status, detail: str) -> Result:
        return Result(reward=self.failure_reward(), score=0.0, status=status, detail=detail)

    async def _grade(self, sample: Sample) -> Result:
        try:
            return await self.grade(sample)
        except Exception as exc:  # the engine answers failures itself; this is a bug, still masked
            log.exception("NeMo-Gym verify: grading failed")
            return self._failed(Status.GRADER_ERROR, str(exc))

    async def verify(self, session_id: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        sample = reading.to_sample(body)
        if isinstance(sample, str):
            result = self._failed(Status.INVALID_INPUT, sample)
        else:
            result = await self._grade(sample)
        status, detail = result.status, result.detail
        logs: dict[str, float] = dict(result.logs)

        session = self.sessions.get(session_id)
        response = body.get("response")
        given = response if isinstance(response, Mapping) else {}
        recorded = reading.tool_calls(given, self.settings.tool_name)
        logs["nemo_gym/tool_calls_recorded"] = float(recorded)
        logs["nemo_gym/tool_calls_run"] = float(session.tool_calls if session is not None else 0)
        logs["nemo_gym/session_lost"] = 0.0
        if session is not None and session.episode_id:
            async with session.lock:  # after a tool call still in flight
                finished = await self.manager.finish(EpisodeFinishRequest(episode_id=session.episode_id))
                session.done = True  # a late tool call must not reach the closed episode
            logs.update(finished.logs)
        failure = session.failure if session is not None else None
        if session is None and session_id and reading.read_environment(body, self.settings.environment):
            logs["nemo_gym/session_lost"] = 1.0
            failure = (
                Status.GRADER_ERROR,
                "the rollout's tool session is not held here (expired, another worker, or a restart): "
                "its tool calls may have failed",
            )
        if status is Status.OK and failure is not None:
            status, detail = failure
        masked = status is not Status.OK
        answer = {key: value for key, value in body.items() if key not in OWN_FIELDS}
        answer.update(
            reward=result.reward,
            mask_sample=masked,
            arbiter_status=status.value,
            arbiter_detail=detail,
            arbiter_score=result.score,
            arbiter_logs=logs,
        )
        return answer
