"""TRL GRPOTrainer environments backed by Arbiter episodes: a persistent Python tool per rollout.

    from trainer.trl_environment import arbiter_environment, arbiter_episode_reward
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
  turn (an action without a tool call: Arbiter grades it against the label), finishes the episode
  (its interpreter freed) and answers the episode's reward, the sum of its step rewards.

The policy's tool call is TRL's (the chat template's `<tool_call>` JSON), not a fenced block in
the text: the tool wraps the code in the syntax the service reads (`tool_syntax`). An episode
whose last allowed turn (`max_turns`) was a tool call is graded on that turn, as the service
does; keep GRPOConfig's `max_tool_calling_iterations` below the episode's turn limit so the
policy's own answer is what gets graded.

Failures are flagged, never silent zeros, never an exception out of the trainer's loop: a rollout
whose episode could not start, was lost (a restarted service) or failed gets reward None (TRL's
"unscorable": left out of the loss, like trainer/trl_reward.py), its tool calls raise
`EpisodeUnavailable` (TRL catches it, shows the error to the policy and counts it in
`tools/failure_frequency`), and the batch's share shows as `arbiter/unscored`. Every rollout's
logs have the OpenRLHF agent's fixed key set (AGENT_KEYS), averaged per batch into TRL's metrics.

One gRPC channel per process (trainer/episode_client.py's client, with its outage policy: an
unreachable service is retried, the same turn each time, for ARBITER_GATEWAY_WAIT_S, then calls
fail fast until it answers again). Settings are its environment variables:
ARBITER_EPISODES (the gRPC host:port holding episodes), ARBITER_EPISODE_ENV, and
trainer/settings.py's (timeout, wait, token, TLS).
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
from typing import Any, Literal, TypeVar

import grpc

from arbiter.v1 import reward_pb2 as pb
from services.common.contract import EPISODE_FAILED_KEY, EPISODE_LOST_KEY, STATUS_KEYS, Status
from trainer.episode_client import AGENT_KEYS, EpisodeClient, Unreachable, client
from trainer.keys import UNREACHABLE_KEY, project
from trainer.trl_reward import UNSCORED_METRIC

log = logging.getLogger(__name__)

__all__ = [
    "AGENT_KEYS",
    "ArbiterEnvironment",
    "EpisodeUnavailable",
    "arbiter_environment",
    "arbiter_episode_reward",
]

ToolSyntax = Literal["fenced", "tag", "both"]
T = TypeVar("T")
_STATUS = {pb.Status.Value(f"STATUS_{s.value}"): s for s in Status}
_OVER = "[the episode is over: its last allowed turn was this tool call, graded as the answer]"


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


def _environment_name(label: str, default: str | None) -> str:
    """A JSON label's "environment" picks it per row, as the OpenRLHF agent reads it."""
    if label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and isinstance(value.get("environment"), str):
            return str(value["environment"])
    return default or os.environ.get("ARBITER_EPISODE_ENV", "").strip() or "python_tool"


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


def tool_action(code: str, syntax: ToolSyntax) -> str:
    """The episode action that runs `code` as one tool call, in a syntax the service reads.

    A fenced block ends at the first ``` inside it, a tag pair at its closing tag: code holding
    the one goes in the other; code that neither can carry is refused (ValueError), since an
    action the service reads as holding no tool call would be graded as the final answer.
    """
    if syntax in ("fenced", "both") and "```" not in code:
        return f"```python\n{code}\n```"
    if syntax in ("tag", "both") and "</code>" not in code:
        return f"<code>{code}</code>"
    raise ValueError(f"the code holds the closing text of every tool syntax the service reads ({syntax})")


def _failure(exc: Exception) -> tuple[Status, str, bool]:
    """A failed call's status, detail and whether the service was unreachable."""
    if isinstance(exc, Unreachable):
        return Status.UPSTREAM_ERROR, str(exc), True
    code = exc.code() if hasattr(exc, "code") else None
    status = Status.TIMEOUT if code is grpc.StatusCode.DEADLINE_EXCEEDED else Status.UPSTREAM_ERROR
    detail = exc.details() if hasattr(exc, "details") else str(exc)
    return status, f"{getattr(code, 'name', code)}: {detail}", False


class _Episode:
    """One rollout's episode on the service: its id, next turn, and how it ended or broke."""

    def __init__(self, client: EpisodeClient, episode_id: str) -> None:
        self.client = client
        self.id = episode_id
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
        flags = {**(logs or {}), STATUS_KEYS[status]: 1.0, UNREACHABLE_KEY: 1.0 if unreachable else 0.0}
        if not unreachable and not (logs or {}).get(EPISODE_LOST_KEY):
            flags[EPISODE_FAILED_KEY] = 1.0
        self.logs = project(flags, AGENT_KEYS)
        log.warning("arbiter episode %s: %s (%s); its reward is None", self.id, status.value, detail)

    async def call(self, name: str, request: Any) -> Any | None:
        """The reply, or None once the call failed (the episode flagged)."""
        try:
            return await self.client.call(name, request)
        except (Unreachable, grpc.RpcError) as exc:
            self.flag(*_failure(exc))
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

    async def ready(self) -> None:
        if self.started is not None:
            await asyncio.wrap_future(self.started)

    async def step(self, action: str) -> Any | None:
        """The step's reply, or None when the episode broke (flagged)."""
        await self.ready()
        if self.broken is not None:
            return None
        request = pb.EpisodeStepRequest(episode_id=self.id, turn=self.turn, action=action)
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
                self.flag(*_failure(exc))
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

    async def answer(self, text: str) -> None:
        """The final turn (unless the service already ended the episode), then finish."""
        await self.ready()
        if self.broken is None and not self.done:
            await self.step(text)  # a fenced block in it runs as a tool call: then no answer came
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
    tool_syntax: ToolSyntax = "both"

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
        episode = _Episode(self._client, f"trl-{os.getpid()}-{uuid.uuid4().hex}")
        request = pb.EpisodeStartRequest(
            episode_id=episode.id,
            environment=_environment_name(label, self.environment),
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
            return "[no code: nothing ran]"  # an empty call would read as the final answer
        try:
            action = tool_action(code, self.tool_syntax)
        except ValueError as exc:
            raise EpisodeUnavailable(str(exc)) from None
        if episode.done:
            return _OVER
        reply = _loop().submit(episode.step(action)).result()
        if reply is None:
            assert episode.broken is not None
            raise EpisodeUnavailable(f"arbiter episode unavailable: {episode.broken[1]}")
        feedback = str(reply.feedback)
        return f"{feedback}{_OVER}" if episode.done else feedback


def arbiter_environment(
    label_column: str = "label",
    environment: str | None = None,
    max_turns: int = 0,
    tool_syntax: ToolSyntax = "both",
) -> type[ArbiterEnvironment]:
    """An `environment_factory` for GRPOTrainer: the environment class, configured.

    `label_column` names the dataset column the final answer is graded against; `environment`
    the episode environment (else a JSON label's "environment", ARBITER_EPISODE_ENV, python_tool);
    `max_turns` lowers the environment's turn limit (0: its own); `tool_syntax` is the service's
    `episodes.python_tool.tool_syntax`.
    """
    return type(
        "ArbiterEnvironment",
        (ArbiterEnvironment,),
        {
            "label_column": label_column,
            "environment": environment,
            "max_turns": max_turns,
            "tool_syntax": tool_syntax,
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
