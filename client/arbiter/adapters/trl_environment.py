"""TRL GRPOTrainer environments backed by Arbiter episodes: a persistent Python tool per rollout.

    from arbiter.adapters.trl_environment import arbiter_environment, arbiter_episode_reward
    trainer = GRPOTrainer(
        ...,
        environment_factory=arbiter_environment(label_column="answer"),
        reward_funcs=[arbiter_episode_reward()],
    )

TRL 1.16 (experimental `environment_factory`) makes one environment instance per rollout, calls
`reset(**row)` before generating, exposes the instance's public methods as tools in the chat
template, and calls them when the policy writes a tool call. Here:

- `reset` starts an Arbiter episode (`python_tool` by default) with the row's label, without
  waiting for it: the episode's interpreter starts on the service while the policy writes.
- the `python(code)` tool is one step of that episode: the code runs in the rollout's own
  persistent sandboxed interpreter and the tool answers its output (the service's feedback).
- `arbiter_episode_reward()` sends each rollout's last assistant message as the episode's final
  turn (a `final` step: Arbiter grades it against the label as it is, a code block in it never
  run), finishes the episode (its interpreter freed) and answers the episode's reward, the sum
  of its step rewards.

The policy's tool call is TRL's (the chat template's `<tool_call>` JSON), not a fenced block in
the text: its code goes to the service as the step's `tool_code`, run as given. The episode's
last allowed turn (`max_turns`, as the start answered it) is kept for the final answer: the
service grades that turn's text as the answer, so a tool call there would be graded instead of
run. Such a call is not sent; the tool answers that no more code runs and the policy should
answer now. Under code_feedback, where the call's program is what gets graded, the last turn's
call is sent (and graded on the hidden tests).

Failures are flagged, never silent zeros, never an exception out of the trainer's loop: a rollout
whose episode could not start, was lost (a restarted service) or failed gets reward None (TRL's
"unscorable": left out of the loss, like arbiter.adapters.trl_reward), its tool calls raise
`EpisodeUnavailable` (TRL catches it, shows the error to the policy and counts it in
`tools/failure_frequency`), and the batch's share shows as `arbiter/unscored`. Every rollout's
logs have the OpenRLHF agent's fixed key set (AGENT_KEYS), averaged per batch into TRL's metrics.

One gRPC channel per process (arbiter.adapters.episode_client's client, with its outage policy: an
unreachable service is retried, the same turn each time, for ARBITER_GATEWAY_WAIT_S, then calls
fail fast until it answers again). Settings are its environment variables:
ARBITER_EPISODES (the gRPC host:port holding episodes), ARBITER_EPISODE_ENV, and
arbiter.adapters.settings's (timeout, wait, token, TLS).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc

from arbiter.adapters.episode_client import (
    AGENT_KEYS,
    LAST_TURN,
    STATUS_FROM_PB,
    EpisodeClient,
    Unreachable,
    answer_turn,
    call_failure,
    client,
    environment_name,
    flagged_logs,
)
from arbiter.adapters.keys import project
from arbiter.adapters.trl_reward import UNSCORED_METRIC
from arbiter.contract import EPISODE_FAILED_KEY, EPISODE_LOST_KEY, STATUS_KEYS, Status
from arbiter.v1 import reward_pb2 as pb

log = logging.getLogger(__name__)

__all__ = [
    "AGENT_KEYS",
    "ArbiterEnvironment",
    "EpisodeUnavailable",
    "arbiter_environment",
    "arbiter_episode_reward",
]

T = TypeVar("T")
_STATUS = STATUS_FROM_PB
_GRADED = "[the episode is over: this tool call was graded as the final answer]"
_OVER = "[the episode is over: no more code runs]"


class EpisodeUnavailable(RuntimeError):
    """The rollout's episode cannot go on (not started, lost, failed, the service unreachable)."""


class _Loop:
    """One event loop on a daemon thread per process: TRL calls `reset` and the tools from its own
    thread, synchronously; the episode client's calls run here, and the reward function's final
    turns of a whole batch run here side by side."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="arbiter-episodes", daemon=True).start()

    def submit(self, work: Awaitable[T]) -> concurrent.futures.Future[T]:
        async def run() -> T:
            return await work

        return asyncio.run_coroutine_threadsafe(run(), self.loop)


_loop_lock = threading.Lock()
_background: _Loop | None = None


def _loop() -> _Loop:
    global _background
    with _loop_lock:
        if _background is None:
            _background = _Loop()
        return _background


def _text(item: Any) -> str:
    """Plain text of a TRL prompt: a string, or conversational messages."""
    if isinstance(item, str):
        return item
    if isinstance(item, Sequence):
        return "\n".join(str(m.get("content", "")) for m in item if isinstance(m, dict))
    return "" if item is None else str(item)


def _label(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _final_answer(completion: Any) -> str:
    """What the rollout answered last: the last assistant message's text (a plain completion as is)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                return _text(content) if not isinstance(content, str) else content
    return ""


class _Episode:
    """One rollout's episode on the service: its id, next turn, and how it ended or broke."""

    def __init__(self, client: EpisodeClient, episode_id: str, environment: str = "python_tool") -> None:
        self.client = client
        self.id = episode_id
        self.environment = environment
        self.max_turns = 0  # the episode's turn limit, once the start answered (0: not known)
        self.turn = 0
        self.done = False  # the service ended it (an answer, or its last allowed turn)
        self.finished = False
        self.broken: tuple[Status, str, bool] | None = None  # status, detail, unreachable
        self.status = Status.OK
        self.rewards: list[float] = []
        self.logs = project({}, AGENT_KEYS)
        self.started: concurrent.futures.Future[None] | None = None
        self.opened = False  # the service answered the start

    def flag(
        self, status: Status, detail: str, unreachable: bool, logs: dict[str, float] | None = None
    ) -> None:
        self.broken = (status, detail, unreachable)
        self.logs = flagged_logs(logs or {}, status, unreachable)
        log.warning("arbiter episode %s: %s (%s); its reward is None", self.id, status.value, detail)

    async def call(self, name: str, request: Any) -> Any | None:
        """The reply, or None once the call failed (the episode flagged)."""
        try:
            return await self.client.call(name, request)
        except (Unreachable, grpc.RpcError) as exc:
            self.flag(*call_failure(exc))
        return None

    async def start(self, request: Any) -> None:
        reply = await self.call("StartEpisode", request)
        if reply is None:
            return
        status = _STATUS.get(reply.status, Status.GRADER_ERROR)
        if status is not Status.OK:
            self.flag(status, reply.detail or "the episode did not start", False)
            return
        self.opened = True
        self.max_turns = int(reply.max_turns)

    async def ready(self) -> None:
        if self.started is not None:
            await asyncio.wrap_future(self.started)

    async def step(self, action: str, tool_code: Sequence[str] = (), final: bool = False) -> Any | None:
        """The step's reply, or None when the episode broke (flagged)."""
        await self.ready()
        if self.broken is not None:
            return None
        request = pb.EpisodeStepRequest(
            episode_id=self.id, turn=self.turn, action=action, tool_code=list(tool_code), final=final
        )
        reply = await self.call("StepEpisode", request)
        if reply is None:
            return None
        self.turn += 1
        status = _STATUS.get(reply.status, Status.GRADER_ERROR)
        logs = dict(reply.logs)
        if logs.get(EPISODE_LOST_KEY) or logs.get(EPISODE_FAILED_KEY):
            self.flag(status, reply.detail or "the episode was lost", False, logs)
            return None
        self.rewards.append(float(reply.reward))
        self.status = status
        self.done = bool(reply.done)
        self.logs = project({**logs, STATUS_KEYS[status]: 1.0}, AGENT_KEYS)
        return reply

    async def finish(self) -> None:
        """Ends the episode on the service (its interpreter freed); its reward and the trajectory's logs.

        A rollout that ended without an answer (TRL's tool loop or token budget stopped it) gets
        what the service answers for it, the sum of its step rewards, as OpenRLHF's agent does.
        A broken episode the service still holds (a step that timed out) is finished too, its
        flags kept.
        """
        await self.ready()
        if self.finished:
            return
        self.finished = True
        request = pb.EpisodeFinishRequest(episode_id=self.id)
        if self.broken is not None:
            if self.opened and not self.broken[2] and not self.logs[EPISODE_LOST_KEY]:
                with contextlib.suppress(Unreachable, grpc.RpcError):  # else it expires there
                    await self.client.call("FinishEpisode", request)
            return
        try:
            reply = await self.client.call("FinishEpisode", request)
        except (Unreachable, grpc.RpcError) as exc:
            if not self.done:
                self.flag(*call_failure(exc))
            return  # else the verdict came back already; the service frees it on expiry
        logs = dict(reply.logs)
        status = _STATUS.get(reply.status, Status.GRADER_ERROR)
        if logs.get(EPISODE_LOST_KEY):
            if not self.done:
                self.flag(status, reply.detail or "the episode was lost", False, logs)
            return
        self.status = status
        self.rewards = [float(reply.reward)]
        self.logs = project({**logs, STATUS_KEYS[status]: 1.0}, AGENT_KEYS)

    async def run(self, code: str) -> str:
        """One tool call: what the policy reads back. Raises EpisodeUnavailable once the episode
        broke; on the turn kept for the answer (answer_turn) the call is not sent."""
        await self.ready()
        if self.broken is None:
            if self.done:
                return _OVER
            if answer_turn(self.environment, self.turn, self.max_turns):
                return LAST_TURN
        reply = await self.step(code, tool_code=(code,))
        if reply is None:
            assert self.broken is not None
            raise EpisodeUnavailable(f"arbiter episode unavailable: {self.broken[1]}")
        feedback = str(reply.feedback)
        return f"{feedback}{_GRADED}" if self.done else feedback

    async def answer(self, text: str) -> None:
        """The final turn (unless the service already ended the episode), then finish. A `final`
        step: graded as it is, whatever it holds (a code block in it is not run)."""
        await self.ready()
        if self.broken is None and not self.done:
            await self.step(text, final=True)
        await self.finish()

    @property
    def reward(self) -> float | None:
        """The episode's reward (the sum of its steps'), or None when it is not a verdict."""
        if self.broken is not None or self.status is not Status.OK:
            return None
        return sum(self.rewards)


class ArbiterEnvironment:
    """One rollout's Arbiter episode, as TRL's `environment_factory` instances are used.

    Only `reset` and the tools are public (TRL exposes every public method as a tool); the
    factory `arbiter_environment` sets the class attributes.
    """

    label_column: str = "label"
    environment: str | None = None  # None: ARBITER_EPISODE_ENV, else python_tool
    max_turns: int = 0  # 0: the environment's own limit

    def __init__(self) -> None:
        self._client = client()
        self._episode: _Episode | None = None

    @property
    def episode(self) -> _Episode | None:
        """This rollout's episode (its id, logs and reward), None before the first reset."""
        return self._episode

    def reset(self, **row: Any) -> None:
        """Starts this rollout's episode with the row's label, without waiting for the service."""
        previous = self._episode
        if previous is not None and not previous.finished:
            _loop().submit(previous.finish())  # a rollout that was never scored: free its interpreter
        label = _label(row.get(self.label_column))
        environment = environment_name(label, self.environment)
        episode = _Episode(self._client, f"trl-{os.getpid()}-{uuid.uuid4().hex}", environment)
        request = pb.EpisodeStartRequest(
            episode_id=episode.id,
            environment=environment,
            prompt=_text(row.get("prompt")),
            label=label,
            max_turns=self.max_turns,
        )
        episode.started = _loop().submit(episode.start(request))
        self._episode = episode
        return None  # the episode's first observation is the prompt, which the policy already has

    def python(self, code: str) -> str:
        """Run Python code in this conversation's own persistent interpreter and see its output.

        Variables, imports and functions persist between calls. The output is what the code
        printed and the value of its last expression; an exception shows its traceback.

        Args:
            code: The Python code to run.

        Returns:
            The output of the code.
        """
        episode = self._episode
        if episode is None:
            raise EpisodeUnavailable("no episode: reset was not called")
        if not code.strip():
            return "[no code: nothing ran]"  # not worth a turn of the episode
        return _loop().submit(episode.run(code)).result()


def arbiter_environment(
    label_column: str = "label",
    environment: str | None = None,
    max_turns: int = 0,
) -> type[ArbiterEnvironment]:
    """An `environment_factory` for GRPOTrainer: the environment class, configured.

    `label_column` names the dataset column the final answer is graded against; `environment`
    the episode environment (else a JSON label's "environment", ARBITER_EPISODE_ENV, python_tool);
    `max_turns` lowers the environment's turn limit (0: its own; its last turn is the answer's).
    """
    return type(
        "ArbiterEnvironment",
        (ArbiterEnvironment,),
        {
            "label_column": label_column,
            "environment": environment,
            "max_turns": max_turns,
            "__doc__": ArbiterEnvironment.__doc__,
        },
    )


RewardFunc = Callable[..., list[float | None]]


def arbiter_episode_reward() -> RewardFunc:
    """A TRL reward function: each rollout's final answer graded by its episode, the episode's reward.

    Needs TRL's `environments` (an `environment_factory` of `arbiter_environment`). A rollout
    without a verdict (its episode not started, lost or failed, the service unreachable, a
    grader failure) gets None, flagged in its logs and in `arbiter/unscored`.
    """

    def reward(
        prompts: list[Any],
        completions: list[Any],
        environments: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        if environments is None:
            raise TypeError(
                "arbiter_episode_reward needs TRL's environments: pass "
                "environment_factory=arbiter_environment(...) to GRPOTrainer"
            )
        episodes: list[_Episode | None] = [
            env.episode if isinstance(env, ArbiterEnvironment) else None for env in environments
        ]

        async def answer_all() -> None:
            await asyncio.gather(
                *(
                    episode.answer(_final_answer(completion))
                    for episode, completion in zip(episodes, completions, strict=True)
                    if episode is not None
                )
            )

        _loop().submit(answer_all()).result()
        rewards = [episode.reward if episode is not None else None for episode in episodes]
        log_metric = columns.get("log_metric")
        if callable(log_metric) and rewards:
            log_metric(UNSCORED_METRIC, sum(r is None for r in rewards) / len(rewards))
            held = [episode for episode in episodes if episode is not None]
            for key in AGENT_KEYS:
                if held:
                    log_metric(key, sum(episode.logs[key] for episode in held) / len(held))
        return rewards

    reward.__name__ = "arbiter_episode"  # TRL logs each reward function under its name
    return reward
