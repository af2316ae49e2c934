"""OpenRLHF agent file: `--train.agent_func_path /path/to/trainer/openrlhf_agent.py`.

With an agent, OpenRLHF (0.8+, 0.11.2 here) never calls `--reward.remote_url`: each rollout
actor loads this file, builds `AgentExecutor()`, and for every prompt runs
`MultiTurnAgentExecutor.execute`, which makes one `ArbiterAgent` and calls `reset` once and
`step` after each generated turn. Every call goes to Arbiter's episode service (an episode per
sample; services/episodes) over one persistent gRPC channel per process (arbiter.adapters.episode_client,
shared with the veRL and TRL adapters; arbiter-client installed on the workers); the
environment (a persistent sandboxed Python tool, test feedback...) answers the feedback text, the
step reward and whether the episode is done. The policy's raw text is each turn's action: the
service finds its tool calls, and a turn without one is the final answer. The episode's reward
is the sum of its step rewards (OpenRLHF adds them up); its extra_logs are the whole
trajectory's, with a fixed key set (AGENT_KEYS) on every sample, Arbiter reachable or not. After
`execute` the episode is finished (its interpreter freed), also when OpenRLHF stopped it on the
token budget.

Environment variables (the trainer's workers get no other settings):
- ARBITER_EPISODES (127.0.0.1:9101): the gRPC host:port of the service holding episodes
  (reward_rules by default; `episodes.service` in Arbiter's settings).
- ARBITER_EPISODE_ENV (python_tool): the environment of every episode, unless a label names one
  (a JSON label with "environment").
- ARBITER_EPISODE_MAX_TURNS (0: the environment's limit).
- The outage policy and the rest of arbiter.adapters.settings as the reward_func adapter reads them:
  ARBITER_GATEWAY_TIMEOUT_S, ARBITER_GATEWAY_WAIT_S, ARBITER_FALLBACK_REWARD, ARBITER_AUTH_TOKEN,
  the TLS variables. An unreachable service is retried (the same turn: the service runs it at most
  once) for at most ARBITER_GATEWAY_WAIT_S, then the episode ends with the fallback reward and
  `trainer/unreachable` = 1; after one wait ran out, calls fail fast until it answers again. An
  episode the service lost (a restarted replica, an expired episode) ends flagged `episode/lost`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from arbiter.adapters.episode_client import (
    AGENT_KEYS,
    STATUS_FROM_PB,
    EpisodeClient,
    Unreachable,
    client,
    environment_name,
    flagged_logs,
)
from arbiter.adapters.keys import project
from arbiter.contract import EPISODE_FAILED_KEY, EPISODE_LOST_KEY, STATUS_KEYS, Status
from arbiter.v1 import reward_pb2 as pb

try:  # OpenRLHF's own base classes; absent only where the file is read without OpenRLHF (docs, lint)
    from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
except ImportError:  # pragma: no cover
    AgentInstanceBase = MultiTurnAgentExecutor = object

# The shared client's names, importable from here as before (arbiter.adapters.episode_client holds them).
__all__ = ["AGENT_KEYS", "AgentExecutor", "ArbiterAgent", "EpisodeClient", "Unreachable", "client"]

log = logging.getLogger(__name__)


def _reward(value: float) -> Any:
    """OpenRLHF reads step rewards with `.item()`: a tensor where torch is (always, in a trainer)."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return _Scalar(value)
    return torch.tensor(value, dtype=torch.float32)


class _Scalar(float):
    def item(self) -> float:
        return float(self)


def _environment(label: Any) -> str:
    return environment_name(label if isinstance(label, str) else "")


_instances: contextvars.ContextVar[list[ArbiterAgent] | None] = contextvars.ContextVar(
    "arbiter_agent_instances", default=None
)


class ArbiterAgent(AgentInstanceBase):  # type: ignore[misc]
    """One sample's episode, driven by OpenRLHF's executor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.client = client()
        self.episode_id = f"openrlhf-{os.getpid()}-{uuid.uuid4().hex}"
        self.turn = 0
        self.broken: tuple[Status, str, bool] | None = None  # why this episode cannot go on
        self.logs = project({}, AGENT_KEYS)
        self.finished = False
        created = _instances.get()
        if created is not None:
            created.append(self)

    def _flagged(
        self, status: Status, detail: str, unreachable: bool, logs: dict[str, float] | None = None
    ) -> dict[str, float]:
        log.warning("arbiter episode %s: %s (%s); fallback reward", self.episode_id, status.value, detail)
        return flagged_logs(logs or {}, status, unreachable)

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        prompt, label = str(states.get("observation", "")), states.get("label")
        label_text = label if isinstance(label, str) else "" if label is None else json.dumps(label)
        max_turns = int(os.environ.get("ARBITER_EPISODE_MAX_TURNS", "0") or 0)
        request = pb.EpisodeStartRequest(
            episode_id=self.episode_id,
            environment=_environment(label_text),
            prompt=prompt,
            label=label_text,
            max_turns=max_turns,
        )
        try:
            reply = await self.client.call("StartEpisode", request)
        except Unreachable as exc:
            self.broken = (Status.UPSTREAM_ERROR, str(exc), True)
            return {"observation": prompt}
        except grpc.RpcError as exc:
            self.broken = (Status.UPSTREAM_ERROR, f"{exc.code()}: {exc.details()}", False)
            return {"observation": prompt}
        status = STATUS_FROM_PB.get(reply.status, Status.GRADER_ERROR)
        if status is not Status.OK:
            self.broken = (status, reply.detail, False)
            return {"observation": prompt}
        return {"observation": reply.observation or prompt}

    def _fallback(
        self, status: Status, detail: str, unreachable: bool, logs: dict[str, float] | None = None
    ) -> dict[str, Any]:
        self.logs = self._flagged(status, detail, unreachable, logs)
        fallback = self.client.settings.fallback_reward
        return {
            "rewards": _reward(fallback),
            "scores": 0.0,
            "environment_feedback": "",
            "done": True,
            "extra_logs": dict(self.logs),
        }

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.broken is not None:
            return self._fallback(*self.broken)
        request = pb.EpisodeStepRequest(
            episode_id=self.episode_id, turn=self.turn, action=str(states.get("action_text", ""))
        )
        try:
            reply = await self.client.call("StepEpisode", request)
        except Unreachable as exc:
            return self._fallback(Status.UPSTREAM_ERROR, str(exc), True)
        except grpc.RpcError as exc:
            status = (
                Status.TIMEOUT if exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED else Status.UPSTREAM_ERROR
            )
            return self._fallback(status, str(exc.details()), False)
        self.turn += 1
        status = STATUS_FROM_PB.get(reply.status, Status.GRADER_ERROR)
        logs = dict(reply.logs)
        if logs.get(EPISODE_LOST_KEY) or logs.get(EPISODE_FAILED_KEY):
            return self._fallback(status, reply.detail, False, logs)
        self.logs = project({**logs, STATUS_KEYS[status]: 1.0}, AGENT_KEYS)
        return {
            "rewards": _reward(reply.reward),
            "scores": float(reply.score),
            "environment_feedback": reply.feedback,
            "done": bool(reply.done),
            "extra_logs": dict(self.logs),
        }

    async def finish(self) -> dict[str, float]:
        """Ends the episode on the service (its interpreter freed); the trajectory's logs."""
        if self.finished or self.broken is not None:
            return self.logs
        self.finished = True
        try:
            reply = await self.client.call(
                "FinishEpisode", pb.EpisodeFinishRequest(episode_id=self.episode_id)
            )
        except (Unreachable, grpc.RpcError):
            return self.logs  # the service frees it on expiry; the steps' answers stand
        logs = dict(reply.logs)
        if logs.get(EPISODE_LOST_KEY):
            return self.logs
        status = STATUS_FROM_PB.get(reply.status, Status.GRADER_ERROR)
        self.logs = project({**logs, STATUS_KEYS[status]: 1.0}, AGENT_KEYS)
        return self.logs


class AgentExecutor(MultiTurnAgentExecutor):  # type: ignore[misc]
    """What OpenRLHF builds (`AgentExecutor()`): its multi-turn loop over ArbiterAgent, then finish."""

    def __init__(self, agent_instance_cls: Callable[..., Any] = ArbiterAgent) -> None:
        super().__init__(agent_instance_cls)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        created: list[ArbiterAgent] = []
        token = _instances.set(created)
        try:
            output = await super().execute(*args, **kwargs)
        finally:
            _instances.reset(token)
            for agent in created:  # also when the loop stopped on the token budget
                await asyncio.shield(agent.finish())
        if created and isinstance(output, dict):
            output["extra_logs"] = dict(created[-1].logs)
        return output
