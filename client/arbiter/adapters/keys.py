"""The one set of log keys every trainer adapter returns, on every call, outage or not.

Trainers merge per-sample logs by key and assume every sample has the first one's keys
(veRL's reward loop raises KeyError otherwise; OpenRLHF's extra_logs must line up). The
gateway's own key set depends on its config and is unknown to a worker that never reached
it, so the adapters answer a fixed set instead: the status one-hot, the unreachable flag,
the cache flag and the text statistics (under default settings: arbiter/logkeys.py), plus what
ARBITER_LOG_KEYS adds. A key the gateway did not send is 0; any other gateway key is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arbiter.contract import CACHED_KEY, STATUS_KEYS
from arbiter.logkeys import DEFAULT_TEXT_STAT_KEYS

# 1 when the adapter answered without reaching the gateway (the reward is the fallback).
UNREACHABLE_KEY = "trainer/unreachable"

BASE_KEYS: tuple[str, ...] = (
    *STATUS_KEYS.values(),
    UNREACHABLE_KEY,
    CACHED_KEY,
    *DEFAULT_TEXT_STAT_KEYS,
)


def adapter_keys(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The fixed keys, then `extra` (ARBITER_LOG_KEYS), without duplicates."""
    return tuple(dict.fromkeys((*BASE_KEYS, *extra)))


def project(logs: Mapping[str, float], keys: Sequence[str]) -> dict[str, float]:
    """Exactly `keys`, in order: the log's value, or 0 when it has none."""
    return {key: float(logs.get(key, 0.0)) for key in keys}
