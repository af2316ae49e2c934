"""The trainer adapters' settings, from the environment of the trainer's worker processes.

Trainers start our adapters inside their own processes (OpenRLHF rollout actors, veRL reward
workers, TRL's trainer), so the only channel for settings is the environment:

- ARBITER_GATEWAY (127.0.0.1:9100): the gateway's gRPC host:port.
- ARBITER_GATEWAY_TIMEOUT_S (120): how long a reachable gateway may take to answer one call.
- ARBITER_GATEWAY_WAIT_S (30): the outage policy. How long one call waits for an unreachable
  gateway, retrying with a logged back-off, before it answers flagged fallbacks; 0 fails fast.
  After one wait ran out, calls fail fast until the gateway answers again.
- ARBITER_FALLBACK_REWARD (0): the reward of a sample Arbiter could not score (always flagged).
- ARBITER_LOG_KEYS (none): gateway logs to pass on beside the fixed set (keys.py),
  comma-separated, e.g. `component/correct,math/boxed`.
- ARBITER_AUTH_TOKEN (none): the gateway's bearer token, when it requires one.
- TLS to a gateway serving it (`gateway.tls`): ARBITER_GATEWAY_CA_FILE (the CA bundle its
  certificate is checked against), or ARBITER_GATEWAY_TLS=1 to check it against the system's
  CAs; ARBITER_GATEWAY_CERT_FILE + ARBITER_GATEWAY_KEY_FILE (this client's certificate, when
  the gateway requires one: mTLS); ARBITER_GATEWAY_SERVER_NAME (the name to verify, when
  ARBITER_GATEWAY's host is not the certificate's).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from arbiter.contract import RESERVED_LOG_KEYS
from arbiter.tls import ClientTLS, grpc_channel_credentials, grpc_channel_options

# Keys the adapters' answers use themselves (veRL: `score`, `acc`): never a passed-on log.
TAKEN_KEYS = RESERVED_LOG_KEYS | {"acc"}


@dataclass(frozen=True)
class AdapterSettings:
    target: str = "127.0.0.1:9100"
    timeout_s: float = 120.0
    wait_s: float = 30.0
    fallback_reward: float = 0.0
    extra_log_keys: tuple[str, ...] = ()
    token: str | None = None
    tls: ClientTLS | None = None

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.wait_s < 0:
            raise ValueError(
                f"ARBITER_GATEWAY_TIMEOUT_S must be > 0 and ARBITER_GATEWAY_WAIT_S >= 0 "
                f"(got {self.timeout_s}, {self.wait_s})"
            )
        taken = sorted(TAKEN_KEYS.intersection(self.extra_log_keys))
        if taken:
            raise ValueError(f"ARBITER_LOG_KEYS names {taken}, which the trainer's answer uses itself")

    @property
    def metadata(self) -> tuple[tuple[str, str], ...] | None:
        """gRPC call metadata: the bearer token, when there is one."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else None

    def channel(self, target: str, *options: tuple[str, Any]) -> grpc.Channel:
        """A channel to `target` that notices a service come back within a couple of seconds
        (not gRPC's default 2 min), over TLS when the settings ask for it."""
        common = [
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.initial_reconnect_backoff_ms", 200),
            ("grpc.min_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 2_000),
            *options,
        ]
        if self.tls is None:
            return grpc.insecure_channel(target, options=common)
        return grpc.secure_channel(
            target, grpc_channel_credentials(self.tls), options=common + grpc_channel_options(self.tls)
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AdapterSettings:
        env = os.environ if env is None else env

        def number(name: str, default: float) -> float:
            text = env.get(name, "").strip()
            try:
                return float(text) if text else default
            except ValueError:
                raise ValueError(f"{name}={text!r} is not a number") from None

        keys = tuple(k.strip() for k in env.get("ARBITER_LOG_KEYS", "").split(",") if k.strip())
        return cls(
            target=env.get("ARBITER_GATEWAY", "").strip() or cls.target,
            timeout_s=number("ARBITER_GATEWAY_TIMEOUT_S", cls.timeout_s),
            wait_s=number("ARBITER_GATEWAY_WAIT_S", cls.wait_s),
            fallback_reward=number("ARBITER_FALLBACK_REWARD", cls.fallback_reward),
            extra_log_keys=keys,
            token=env.get("ARBITER_AUTH_TOKEN") or None,
            tls=_tls_from_env(env),
        )


def _tls_from_env(env: Mapping[str, str]) -> ClientTLS | None:
    """TLS when a CA bundle, a client certificate or ARBITER_GATEWAY_TLS=1 says so; else plaintext."""
    names = {
        "ca_file": "CA_FILE",
        "cert_file": "CERT_FILE",
        "key_file": "KEY_FILE",
        "server_name": "SERVER_NAME",
    }
    values = {field: env.get(f"ARBITER_GATEWAY_{suffix}", "").strip() for field, suffix in names.items()}
    if not any(values.values()) and env.get("ARBITER_GATEWAY_TLS", "").strip() not in ("1", "true", "yes"):
        return None
    return ClientTLS(**values)
