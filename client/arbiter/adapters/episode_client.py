"""The trainer side's client of Arbiter's episode service, shared by every multi-turn adapter.

The OpenRLHF agent (trainer/openrlhf_agent.py), the veRL tool (arbiter.adapters.verl_tool) and the TRL
environment (arbiter.adapters.trl_environment) drive the same episodes over the same gRPC API with the
same outage policy and the same fixed log keys; only how their framework hands over turns
differs. What they share lives here, so that a change to the episode API or to the outage policy
is made once.

Environment variables (a trainer's workers get no other settings):
- ARBITER_EPISODES (127.0.0.1:9101): the gRPC host:port of the service holding episodes.
- ARBITER_EPISODE_ENV (python_tool): the environment of an episode whose label names none.
- arbiter.adapters.settings's: ARBITER_GATEWAY_TIMEOUT_S, ARBITER_GATEWAY_WAIT_S (the outage policy:
  an unreachable service is retried, the same turn each time, for at most that long; after one
  wait ran out, calls fail fast until it answers again), ARBITER_FALLBACK_REWARD,
  ARBITER_AUTH_TOKEN and the TLS variables.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import grpc

from arbiter.adapters.keys import UNREACHABLE_KEY, project
from arbiter.adapters.settings import AdapterSettings
from arbiter.contract import EPISODE_COUNTER_KEYS, EPISODE_FAILED_KEY, EPISODE_LOST_KEY, STATUS_KEYS, Status
from arbiter.logkeys import DEFAULT_TEXT_STAT_KEYS
from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc

__all__ = [
    "AGENT_KEYS",
    "DEFAULT_TARGET",
    "LAST_TURN",
    "STATUS_FROM_PB",
    "TOOL_CALL_GRADED",
    "EpisodeClient",
    "Unreachable",
    "answer_turn",
    "call_failure",
    "client",
    "environment_name",
    "flagged_logs",
]

log = logging.getLogger(__name__)

# Every sample's (or trajectory's) logs, in this order: status one-hot, reachability, the episode
# counters and flags, the trajectory's emergence statistics (default emergence settings).
AGENT_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *STATUS_KEYS.values(),
            UNREACHABLE_KEY,
            *EPISODE_COUNTER_KEYS,
            EPISODE_LOST_KEY,
            EPISODE_FAILED_KEY,
            *(f"trajectory/{k}" for k in DEFAULT_TEXT_STAT_KEYS),
        )
    )
)
STATUS_FROM_PB: Mapping[int, Status] = {pb.Status.Value(f"STATUS_{s.value}"): s for s in Status}
DEFAULT_TARGET = "127.0.0.1:9101"
FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0
# Environments whose tool call is itself what gets graded at the last turn (code_feedback: the
# program, on the hidden tests). Elsewhere (python_tool) the last turn's *text* is graded as the
# final answer, so an adapter that knows a turn is a tool call keeps the last turn for the answer.
TOOL_CALL_GRADED = frozenset({"code_feedback"})
# What the policy reads for a tool call on the turn kept for its answer (the call did not run).
LAST_TURN = (
    "[not run: the episode's last turn is kept for your final answer; no more tool calls run, answer now]"
)


class Unreachable(Exception):
    """The service could not be reached within the outage policy's wait."""


class EpisodeClient:
    """The process's channel to the episode service: thread- and loop-agnostic (a sync gRPC channel
    whose futures are awaited on whichever event loop calls), with the outage policy."""

    def __init__(self, settings: AdapterSettings, target: str) -> None:
        self.settings = settings
        self.target = target
        self.metadata = settings.metadata
        self.channel = settings.channel(target)
        self.stub = pb_grpc.EpisodeServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        self._down_since: float | None = None

    async def _once(self, method: Any, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Any] = loop.create_future()
        call = method.future(request, timeout=self.settings.timeout_s, metadata=self.metadata)

        def settle(done: Any) -> None:
            if waiter.done():
                return
            try:
                waiter.set_result(done.result())
            except BaseException as exc:  # grpc.RpcError, or the call's cancellation
                waiter.set_exception(exc)

        call.add_done_callback(lambda done: loop.call_soon_threadsafe(settle, done))
        try:
            return await waiter
        except asyncio.CancelledError:
            call.cancel()
            raise

    async def call(self, name: str, request: Any) -> Any:
        """The reply; retries an unreachable service (the calls are idempotent) up to the wait,
        then raises Unreachable. Any other gRPC failure raises grpc.RpcError at once."""
        method = getattr(self.stub, name)
        wait_until = time.monotonic() + (0.0 if self._down_since is not None else self.settings.wait_s)
        delay = FIRST_DELAY_S
        while True:
            try:
                reply = await self._once(method, request)
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                if code is not grpc.StatusCode.UNAVAILABLE:
                    raise
                left = wait_until - time.monotonic()
                if left <= 0:
                    with self._lock:
                        if self._down_since is None:
                            self._down_since = time.monotonic()
                            log.error(
                                "arbiter episodes %s unreachable: flagged fallbacks until it answers",
                                self.target,
                            )
                    raise Unreachable(f"episode service {self.target} unreachable") from exc
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, MAX_DELAY_S)
                continue
            if self._down_since is not None:
                with self._lock:
                    self._down_since = None
            return reply


_lock = threading.Lock()
_clients: dict[str, EpisodeClient] = {}


def client(target: str | None = None) -> EpisodeClient:
    """The process's client for `target` (None: ARBITER_EPISODES), made on first use with the
    settings the environment has then; one gRPC channel per target and process."""
    target = target or os.environ.get("ARBITER_EPISODES", "").strip() or DEFAULT_TARGET
    with _lock:
        made = _clients.get(target)
        if made is None:
            made = _clients[target] = EpisodeClient(AdapterSettings.from_env(), target)
        return made


def environment_name(label: str, default: str | None = None) -> str:
    """The episode's environment: a JSON label's "environment", else `default`,
    ARBITER_EPISODE_ENV, python_tool."""
    if label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and isinstance(value.get("environment"), str):
            return str(value["environment"])
    return default or os.environ.get("ARBITER_EPISODE_ENV", "").strip() or "python_tool"


def answer_turn(environment: str, turn: int, max_turns: int) -> bool:
    """Whether `turn` is kept for the final answer, a tool call there not sent: the episode's last
    allowed turn (`max_turns` as the start answered it; 0: unknown), where the service would
    grade the call's text as the answer instead of running it. Not so where the tool call is
    what gets graded (TOOL_CALL_GRADED)."""
    return max_turns > 0 and turn >= max_turns - 1 and environment not in TOOL_CALL_GRADED


def call_failure(exc: BaseException) -> tuple[Status, str, bool]:
    """A failed call's status, detail and whether the service was unreachable."""
    if isinstance(exc, Unreachable):
        return Status.UPSTREAM_ERROR, str(exc), True
    code = exc.code() if isinstance(exc, grpc.RpcError) and hasattr(exc, "code") else None
    status = Status.TIMEOUT if code is grpc.StatusCode.DEADLINE_EXCEEDED else Status.UPSTREAM_ERROR
    detail = exc.details() if hasattr(exc, "details") else str(exc)
    return status, f"{getattr(code, 'name', code)}: {detail}", False


def flagged_logs(logs: Mapping[str, float], status: Status, unreachable: bool) -> dict[str, float]:
    """The logs of an episode that cannot go on: one status (the failure's), reachability, and
    `episode/failed` unless the service was unreachable or lost the episode (its own flags)."""
    flags = {**logs, UNREACHABLE_KEY: 1.0 if unreachable else 0.0}
    for key in STATUS_KEYS.values():
        flags[key] = 0.0
    flags[STATUS_KEYS[status]] = 1.0
    if not unreachable and not logs.get(EPISODE_LOST_KEY):
        flags[EPISODE_FAILED_KEY] = 1.0
    return project(flags, AGENT_KEYS)
