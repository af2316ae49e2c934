"""The trainer side's one connection to the gateway: a gRPC channel per process.

Rollout actors call reward functions from many threads at once (OpenRLHF runs
`reward_func` through asyncio.to_thread); a sync gRPC channel is thread-safe and
multiplexes them all over one HTTP/2 connection, where OpenRLHF's own HTTP client
opens a new connection per sample. When the gateway cannot be reached in time the
samples get the fallback reward and `trainer/unreachable = 1`, never an exception
that would leave the trainer without a reward.

Environment: ARBITER_GATEWAY (gRPC host:port, default 127.0.0.1:9100),
ARBITER_GATEWAY_TIMEOUT_S (default 120), ARBITER_FALLBACK_REWARD (default 0),
ARBITER_AUTH_TOKEN (when the gateway requires a bearer token).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence

import grpc

from arbiter.v1 import reward_pb2_grpc as pb_grpc
from services.common.contract import Result, Sample, ScoreRequest, Status
from services.common.protoconv import request_to_pb, response_from_pb

log = logging.getLogger(__name__)

UNREACHABLE_KEY = "trainer/unreachable"


class GatewayConnection:
    def __init__(
        self, target: str, timeout_s: float = 120.0, fallback_reward: float = 0.0, token: str | None = None
    ) -> None:
        self.target = target
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self.timeout_s = timeout_s
        self.fallback_reward = fallback_reward
        self._channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                ("grpc.keepalive_time_ms", 30_000),
            ],
        )
        self._stub = pb_grpc.RewardServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._keys: tuple[str, ...] = ()  # learned from the first answer, for fallbacks

    def score(self, samples: Sequence[Sample]) -> list[Result]:
        """Results for `samples`, in order; the fallback (flagged) when the gateway stays unreachable."""
        if not samples:
            return []
        request = request_to_pb(ScoreRequest(samples=list(samples), timeout_s=self.timeout_s))
        deadline = time.monotonic() + self.timeout_s + 5.0
        delay, last_error = 0.2, ""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                reply = self._stub.Score(
                    request, timeout=remaining, wait_for_ready=True, metadata=self._metadata
                )
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                last_error = (
                    f"{getattr(code, 'name', code)}: {exc.details() if hasattr(exc, 'details') else exc}"
                )
                if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    break  # the gateway refused the request: retrying will not help
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 2, 5.0)
                continue
            results = response_from_pb(reply).results
            if results and not self._keys:
                self._keys = tuple(results[0].logs)
            return results
        log.error(
            "arbiter gateway %s unreachable (%s); fallback rewards for %d samples",
            self.target,
            last_error,
            len(samples),
        )
        logs = {**dict.fromkeys(self._keys, 0.0), UNREACHABLE_KEY: 1.0}
        detail = f"gateway {self.target} unreachable: {last_error or 'deadline passed'}"
        return [
            Result(
                reward=self.fallback_reward, score=0.0, status=Status.UPSTREAM_ERROR, detail=detail, logs=logs
            )
            for _ in samples
        ]

    def close(self) -> None:
        self._channel.close()


_lock = threading.Lock()
_connection: GatewayConnection | None = None


def connection() -> GatewayConnection:
    """The process's connection, made on first use from the environment."""
    global _connection
    with _lock:
        if _connection is None:
            _connection = GatewayConnection(
                os.environ.get("ARBITER_GATEWAY", "127.0.0.1:9100"),
                float(os.environ.get("ARBITER_GATEWAY_TIMEOUT_S", "120")),
                float(os.environ.get("ARBITER_FALLBACK_REWARD", "0")),
                os.environ.get("ARBITER_AUTH_TOKEN") or None,
            )
        return _connection
