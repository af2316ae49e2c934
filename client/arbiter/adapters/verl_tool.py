"""A veRL tool (verl.tools.base_tool.BaseTool) that runs the policy's tool calls in Arbiter episodes.

veRL's multi-turn rollouts (0.9.1: verl/experimental/agent_loop/tool_agent_loop.py, agent
`tool_agent`) load tools from the YAML file named by
`actor_rollout_ref.rollout.multi_turn.tool_config_path` (verl/tools/tool_registry.py):

    tools:
      - class_name: arbiter.adapters.verl_tool.ArbiterTool     # arbiter-client installed on the workers
        config: {type: native, environment: python_tool}

Each trajectory gets one Arbiter episode (services/episodes: python_tool's persistent sandboxed
interpreter by default, or `code_feedback`). A tool call's `code` runs as one episode step, sent
as the step's `tool_code` (veRL's parser already found the call: nothing is wrapped in a fence for
the service to find again), so variables survive between calls; the step's feedback (the cell's
output, test failures) is the tool response, with the step reward and the trajectory's logs (a
fixed key set) as metrics. The final answer goes as a `final` step: graded, never run, even when
it holds a code block.

The episode's last allowed turn (`max_turns`, as the start answers it) is kept for the final
answer: python_tool grades that turn's text as the answer, so a tool call there would be graded
instead of run and the policy's real answer never seen. Such a call is not sent; the tool answers
that no more code runs and the policy should answer now (it costs no turn). Under code_feedback,
where the call's program is what gets graded, the last turn's call is sent and graded on the
hidden tests.

veRL 0.9.1's ToolAgentLoop calls `create`, `execute` and `release` around *every* tool call
(there is no per-trajectory hook, and no `verl/interactions` package), so an episode cannot be an
instance: it belongs to the trajectory, found through the `agent_data` veRL passes to `execute`.
`release` of such a per-call instance only forgets the instance; the episode is finished when the
trajectory ends: by arbiter.adapters.verl_agent_loop (agent `arbiter_tool_agent`, which also grades the
final answer and makes the episode's reward the trajectory's), or, under veRL's plain
`tool_agent`, when veRL drops the trajectory's state (a finalizer), or at the service's expiry.
A caller that drives a tool per trajectory without `agent_data` (create, execute..., calc_reward,
release: the older rollout's lifecycle) gets one episode per instance, finished by `calc_reward`
or `release`.

Tool config keys (all optional): `environment` (python_tool; else ARBITER_EPISODE_ENV),
`episodes` (the gRPC host:port; else ARBITER_EPISODES, 127.0.0.1:9101), `max_turns` (0: the
environment's limit), `grade_final_answer` (true: the agent loop sends the trajectory's final
answer to this tool's episode). Per sample, `extra_info.tools_kwargs.<tool name>.create_kwargs`
may carry `label` (or `ground_truth`, veRL's name), `environment` and `metadata`.

The connection and outage policy are arbiter.adapters.episode_client's (one gRPC channel per process;
ARBITER_GATEWAY_WAIT_S, ARBITER_FALLBACK_REWARD, ARBITER_AUTH_TOKEN, TLS: arbiter.adapters.settings).
An unreachable service is a tool response saying so, the fallback reward and
`trainer/unreachable` = 1 in the metrics and the trajectory's logs: never a silent zero, never an
exception into veRL's loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from arbiter.adapters.episode_client import (
    AGENT_KEYS,
    LAST_TURN,
    STATUS_FROM_PB,
    EpisodeClient,
    Unreachable,
    answer_turn,
    call_failure,
    client,
    flagged_logs,
)
from arbiter.adapters.keys import project
from arbiter.contract import EPISODE_FAILED_KEY, EPISODE_LOST_KEY, STATUS_KEYS, Status
from arbiter.v1 import reward_pb2 as pb

log = logging.getLogger(__name__)

# The metrics of every call and the logs of every trajectory, in this order: the episode's keys.
TOOL_KEYS: tuple[str, ...] = AGENT_KEYS
GRADED_CALL = "[the episode is over: this call was graded as the final answer]"
DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in a persistent sandboxed interpreter: variables and imports stay "
            "between calls. Print what you want to see; a cell's last expression is echoed."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python code to run."}},
            "required": ["code"],
        },
    },
}
_STATUS = STATUS_FROM_PB


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _first_user_text(messages: Any) -> str:
    for message in messages or ():
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # multimodal parts: the text ones
                parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
                return "".join(str(p) for p in parts)
    return ""


@dataclass
class EpisodeSummary:
    """What a finished episode gave: its reward (the fallback when it broke), score and logs."""

    reward: float
    score: float
    logs: dict[str, float]
    unreachable: bool = False


@dataclass
class Episode:
    """One trajectory's episode on the service; its steps run one at a time (parallel calls)."""

    episode_id: str
    start: pb.EpisodeStartRequest
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    started: bool = False
    max_turns: int = 0  # the episode's turn limit, as the start answered it (0: not known)
    turn: int = 0
    done: bool = False
    finished: bool = False
    broken: tuple[Status, str, bool] | None = None  # why it cannot go on
    reward: float = 0.0  # the sum of the step rewards so far
    score: float = 0.0
    logs: dict[str, float] = field(default_factory=lambda: project({}, TOOL_KEYS))
    summary: EpisodeSummary | None = None


@dataclass
class _Instance:
    create_kwargs: dict[str, Any]
    episode: Episode | None = None  # its own episode (no agent_data: one per instance)


class ArbiterTool(BaseTool):  # type: ignore[misc]
    """A tool call is a step of the trajectory's Arbiter episode; see the module's docstring."""

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        schema = tool_schema or OpenAIFunctionToolSchema.model_validate(DEFAULT_SCHEMA)
        super().__init__(config, schema)
        self.environment = str(
            config.get("environment") or os.environ.get("ARBITER_EPISODE_ENV", "").strip() or "python_tool"
        )
        self.max_turns = int(config.get("max_turns") or os.environ.get("ARBITER_EPISODE_MAX_TURNS") or 0)
        if config.get("action_template"):
            log.warning("ArbiterTool: `action_template` is no longer used (calls go as tool_code)")
        self.grade_final_answer = bool(config.get("grade_final_answer", True))
        self.client = client(config.get("episodes") or None)
        self._instances: dict[str, _Instance] = {}
        self._trajectories: weakref.WeakKeyDictionary[Any, Episode] = weakref.WeakKeyDictionary()

    # ---- veRL's BaseTool interface ----

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """Remembers the sample's create_kwargs; the episode starts with the first call (or with
        the trajectory, under arbiter.adapters.verl_agent_loop), when veRL says which trajectory it is."""
        instance_id = instance_id or uuid.uuid4().hex
        nested = kwargs.get("create_kwargs")
        create_kwargs = dict(nested) if isinstance(nested, Mapping) else {k: v for k, v in kwargs.items()}
        self._instances[instance_id] = _Instance(create_kwargs)
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, float]]:
        """Runs `parameters["code"]` as the episode's next step: (feedback, step reward, metrics)."""
        agent_data = kwargs.get("agent_data")
        instance = self._instances.setdefault(instance_id, _Instance({}))  # released like any
        episode = self._episode_for(instance, agent_data)
        code = parameters.get("code") if isinstance(parameters, Mapping) else None
        if not isinstance(code, str) or not code.strip():
            return ToolResponse(text="Error: the call has no `code` to run."), 0.0, dict(episode.logs)
        return await self._step(episode, code, tool_code=(code,))

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The reward of the instance's own episode, which it finishes (its interpreter freed).
        Under ToolAgentLoop an instance has none (0): the trajectory's reward comes at its end."""
        instance = self._instances.get(instance_id)
        if instance is None or instance.episode is None:
            return 0.0
        return (await self.finish(instance.episode)).reward

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forgets the instance; finishes its own episode (a trajectory's ends with the trajectory)."""
        instance = self._instances.pop(instance_id, None)
        if instance is not None and instance.episode is not None:
            await asyncio.shield(self.finish(instance.episode))

    # ---- trajectories (arbiter.adapters.verl_agent_loop) ----

    async def open(self, agent_data: Any) -> Episode:
        """Starts the trajectory's episode now (its interpreter starts while the policy writes)."""
        episode = self._episode_for(_Instance({}), agent_data)
        async with episode.lock:
            await self._ensure_started(episode)
        return episode

    def episode_of(self, agent_data: Any) -> Episode | None:
        return self._trajectories.get(agent_data)

    async def conclude(self, agent_data: Any, final_answer: str | None) -> EpisodeSummary | None:
        """Sends the final answer as the last step (`final`: graded as it is, a code block in it
        never run) when the episode still runs, then finishes it. None when the trajectory never
        had an episode."""
        episode = self._trajectories.get(agent_data)
        if episode is None:
            return None
        if final_answer is not None and not episode.done and episode.broken is None:
            await self._step(episode, final_answer, final=True)
        return await self.finish(episode)

    async def finish(self, episode: Episode) -> EpisodeSummary:
        """Ends the episode on the service (idempotent there and here)."""
        async with episode.lock:
            if episode.summary is not None:
                return episode.summary
            episode.finished = True
            if episode.broken is not None:
                episode.summary = self._flagged_summary(episode)
                return episode.summary
            if episode.started:
                try:
                    reply = await self.client.call(
                        "FinishEpisode", pb.EpisodeFinishRequest(episode_id=episode.episode_id)
                    )
                except (Unreachable, grpc.RpcError) as exc:
                    log.warning("arbiter episode %s: finish failed (%s)", episode.episode_id, exc)
                else:  # a lost finish keeps the steps' answers (the service expired it)
                    if not reply.logs.get(EPISODE_LOST_KEY):
                        status = _STATUS.get(reply.status, Status.GRADER_ERROR)
                        episode.logs = project({**reply.logs, STATUS_KEYS[status]: 1.0}, TOOL_KEYS)
                        episode.reward, episode.score = float(reply.reward), float(reply.score)
            episode.summary = EpisodeSummary(episode.reward, episode.score, dict(episode.logs))
            return episode.summary

    # ---- internals ----

    def _episode_for(self, instance: _Instance, agent_data: Any) -> Episode:
        if agent_data is None:  # the per-instance lifecycle
            if instance.episode is None:
                instance.episode = self._new_episode(instance.create_kwargs, "")
            return instance.episode
        episode = self._trajectories.get(agent_data)
        if episode is None:
            tools_kwargs = getattr(agent_data, "tools_kwargs", None) or {}
            per_tool = tools_kwargs.get(self.name, {}) if isinstance(tools_kwargs, Mapping) else {}
            create_kwargs = per_tool.get("create_kwargs") if isinstance(per_tool, Mapping) else None
            merged = {**(create_kwargs or {}), **instance.create_kwargs}
            episode = self._new_episode(merged, _first_user_text(getattr(agent_data, "messages", None)))
            self._trajectories[agent_data] = episode
            # veRL's plain tool_agent never says the trajectory ended: finish when it drops it.
            weakref.finalize(agent_data, _finish_dropped, self.client, episode)
        return episode

    def _new_episode(self, create_kwargs: Mapping[str, Any], prompt: str) -> Episode:
        label = create_kwargs.get("label", create_kwargs.get("ground_truth"))
        metadata = create_kwargs.get("metadata")
        episode_id = f"verl-{os.getpid()}-{uuid.uuid4().hex}"
        start = pb.EpisodeStartRequest(
            episode_id=episode_id,
            environment=str(create_kwargs.get("environment") or self.environment),
            prompt=str(create_kwargs.get("prompt") or prompt),
            label=_text(label),
            metadata={str(k): _text(v) for k, v in metadata.items()} if isinstance(metadata, Mapping) else {},
            max_turns=int(create_kwargs.get("max_turns") or self.max_turns),
        )
        return Episode(episode_id, start)

    async def _ensure_started(self, episode: Episode) -> None:
        """Starts the episode once (the lock held); a failure marks it broken."""
        if episode.started or episode.broken is not None:
            return
        try:
            reply = await self.client.call("StartEpisode", episode.start)
        except (Unreachable, grpc.RpcError) as exc:
            episode.broken = call_failure(exc)
            return
        status = _STATUS.get(reply.status, Status.GRADER_ERROR)
        if status is not Status.OK:
            episode.broken = (status, reply.detail, False)
            return
        episode.started = True
        episode.max_turns = int(reply.max_turns)

    async def _step(
        self, episode: Episode, action: str, tool_code: Sequence[str] = (), final: bool = False
    ) -> tuple[ToolResponse, float, dict[str, float]]:
        """One step: tool calls (`tool_code`, the action being the call's text) or the final answer."""
        async with episode.lock:
            await self._ensure_started(episode)
            if episode.broken is not None:
                return self._broken_answer(episode)
            if episode.done or episode.finished:
                text = "The episode is over: no more tool calls run. Give your final answer."
                return ToolResponse(text=text), 0.0, dict(episode.logs)
            if tool_code and answer_turn(episode.start.environment, episode.turn, episode.max_turns):
                return ToolResponse(text=LAST_TURN), 0.0, dict(episode.logs)
            request = pb.EpisodeStepRequest(
                episode_id=episode.episode_id,
                turn=episode.turn,
                action=action,
                tool_code=list(tool_code),
                final=final,
            )
            try:
                reply = await self.client.call("StepEpisode", request)
            except (Unreachable, grpc.RpcError) as exc:
                episode.broken = call_failure(exc)
                return self._broken_answer(episode)
            episode.turn += 1
            status = _STATUS.get(reply.status, Status.GRADER_ERROR)
            logs = dict(reply.logs)
            if logs.get(EPISODE_LOST_KEY) or logs.get(EPISODE_FAILED_KEY):
                episode.logs = project(logs, TOOL_KEYS)
                episode.broken = (status, reply.detail, False)
                return self._broken_answer(episode)
            episode.logs = project({**logs, STATUS_KEYS[status]: 1.0}, TOOL_KEYS)
            episode.reward += float(reply.reward)
            episode.score = float(reply.score)
            episode.done = bool(reply.done)
            text = reply.feedback
            if not text and episode.done and not final:  # the service graded the call (code_feedback)
                text = GRADED_CALL
            return ToolResponse(text=text), float(reply.reward), dict(episode.logs)

    def _flagged_summary(self, episode: Episode) -> EpisodeSummary:
        assert episode.broken is not None
        status, _detail, unreachable = episode.broken
        logs = flagged_logs(episode.logs, status, unreachable)
        return EpisodeSummary(self.client.settings.fallback_reward, 0.0, logs, unreachable)

    def _broken_answer(self, episode: Episode) -> tuple[ToolResponse, float, dict[str, float]]:
        summary = self._flagged_summary(episode)
        episode.logs = summary.logs
        status, detail, unreachable = episode.broken or (Status.GRADER_ERROR, "", False)
        log.warning("arbiter episode %s: %s (%s)", episode.episode_id, status.value, detail)
        why = "the tool service is unreachable" if unreachable else f"the tool failed ({status.value})"
        return ToolResponse(text=f"Error: {why}; no code ran."), summary.reward, dict(summary.logs)


_in_flight: set[Any] = set()  # FinishEpisode futures of dropped trajectories


def _finish_dropped(episode_client: EpisodeClient, episode: Episode) -> None:
    """veRL dropped a trajectory whose episode is still open: a fire-and-forget FinishEpisode
    (a gRPC future; no event loop needed). The service's expiry is the backstop."""
    if episode.finished or not episode.started:
        return
    episode.finished = True
    try:
        future = episode_client.stub.FinishEpisode.future(
            pb.EpisodeFinishRequest(episode_id=episode.episode_id),
            timeout=episode_client.settings.timeout_s,
            metadata=episode_client.metadata,
        )
    except Exception as exc:  # a closed channel at interpreter exit
        log.debug("arbiter episode %s: finish on drop failed (%s)", episode.episode_id, exc)
        return
    # gRPC cancels a call whose future is garbage-collected: hold it until it is done.
    _in_flight.add(future)
    future.add_done_callback(_in_flight.discard)
