"""The trainer side's one connection to the gateway: a gRPC channel per process, and the outage policy.

Rollout actors call reward functions from many threads at once (OpenRLHF runs
`reward_func` through asyncio.to_thread, veRL on a thread pool); a sync gRPC channel is
thread-safe and multiplexes them all over one HTTP/2 connection.

Outage policy (settings.py): a call that finds the gateway unreachable retries with
a logged, capped back-off for at most ARBITER_GATEWAY_WAIT_S, then answers flagged
fallbacks (`status/upstream_error = 1`, `trainer/unreachable = 1`, reward
ARBITER_FALLBACK_REWARD). Once one call's wait ran out the connection is marked down and
every call fails fast (one connection attempt, no wait) until the gateway answers again:
an outage costs a batch one wait, not one wait per sample. A gateway that is reachable but
slower than ARBITER_GATEWAY_TIMEOUT_S gives `status/timeout` fallbacks, not a retry that
would double the stall. Never an exception that leaves the trainer without a reward.

Every result comes back with exactly the adapters' key set (keys.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import grpc

from arbiter.adapters.keys import UNREACHABLE_KEY, adapter_keys, project
from arbiter.adapters.settings import AdapterSettings
from arbiter.contract import STATUS_KEYS, Result, Sample, ScoreRequest, Status
from arbiter.protoconv import request_to_pb, response_from_pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

__all__ = ["UNREACHABLE_KEY", "GatewayConnection", "connection"]

FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0
LOG_EVERY_S = 5.0  # retries of many threads share one warning per interval


class GatewayConnection:
    def __init__(self, settings: AdapterSettings) -> None:
        self.settings = settings
        self.target = settings.target
        self.fallback_reward = settings.fallback_reward
        self.log_keys = adapter_keys(settings.extra_log_keys)
        self._metadata = settings.metadata
        self._channel = settings.channel(
            settings.target,
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
        )
        self._stub = pb_grpc.RewardServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        self._down_since: float | None = None  # set when a wait ran out; cleared by an answer
        self._last_warning = 0.0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def score(self, samples: Sequence[Sample]) -> list[Result]:
        """Results for `samples`, in order, each with exactly `log_keys`; flagged fallbacks on failure."""
        if not samples:
            return []
        request = request_to_pb(ScoreRequest(samples=list(samples), timeout_s=self.settings.timeout_s))
        wait_until = time.monotonic() + (0.0 if self.down else self.settings.wait_s)
        delay, attempt = FIRST_DELAY_S, 0
        while True:
            attempt += 1
            try:
                reply = self._stub.Score(
                    request, timeout=self.settings.timeout_s + 5.0, metadata=self._metadata
                )
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                why = f"{getattr(code, 'name', code)}: {exc.details() if hasattr(exc, 'details') else exc}"
                if code is not grpc.StatusCode.UNAVAILABLE:
                    # Reached but refused or too slow: retrying would not help, or double the stall.
                    status = (
                        Status.TIMEOUT if code is grpc.StatusCode.DEADLINE_EXCEEDED else Status.UPSTREAM_ERROR
                    )
                    log.error(
                        "arbiter gateway %s: %s; fallback rewards for %d samples",
                        self.target,
                        why,
                        len(samples),
                    )
                    return self._fallbacks(
                        len(samples), status, f"gateway {self.target}: {why}", reached=True
                    )
                left = wait_until - time.monotonic()
                if left <= 0:
                    return self._give_up(len(samples), why, attempt)
                pause = min(delay, left)
                self._warn(
                    f"arbiter gateway {self.target} unreachable ({why}); retry {attempt} in "
                    f"{pause:.1f} s, waiting at most {left:.0f} s more (ARBITER_GATEWAY_WAIT_S)"
                )
                time.sleep(pause)
                delay = min(delay * 2, MAX_DELAY_S)
                continue
            if self._down_since is not None:
                with self._lock:
                    if self._down_since is not None:
                        log.warning(
                            "arbiter gateway %s answers again after %.0f s",
                            self.target,
                            time.monotonic() - self._down_since,
                        )
                        self._down_since = None
            return [
                r.model_copy(update={"logs": project(r.logs, self.log_keys)})
                for r in response_from_pb(reply).results
            ]

    def _give_up(self, count: int, why: str, attempts: int) -> list[Result]:
        with self._lock:
            first = self._down_since is None
            if first:
                self._down_since = time.monotonic()
        if first:
            log.error(
                "arbiter gateway %s unreachable after %d attempts (%s): flagged fallback rewards "
                "(trainer/unreachable = 1) until it answers again; calls fail fast meanwhile",
                self.target,
                attempts,
                why,
            )
        detail = f"gateway {self.target} unreachable: {why}"
        return self._fallbacks(count, Status.UPSTREAM_ERROR, detail, reached=False)

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last_warning < LOG_EVERY_S:
                return
            self._last_warning = now
        log.warning("%s", message)

    def _fallbacks(self, count: int, status: Status, detail: str, reached: bool) -> list[Result]:
        logs = project({STATUS_KEYS[status]: 1.0, UNREACHABLE_KEY: 0.0 if reached else 1.0}, self.log_keys)
        result = Result(reward=self.fallback_reward, score=0.0, status=status, detail=detail, logs=logs)
        return [result] * count

    def close(self) -> None:
        self._channel.close()


_lock = threading.Lock()
_connection: GatewayConnection | None = None


def connection() -> GatewayConnection:
    """The process's connection, made on first use from the environment (settings.py)."""
    global _connection
    with _lock:
        if _connection is None:
            _connection = GatewayConnection(AdapterSettings.from_env())
        return _connection
