"""A rolling window over the last N rewards, for a person watching a training run.

`GET /v1/stats` answers with reward mean/std, accuracy per datasource, response length,
truncation and reflection rates, failures, and warnings for the failure patterns of
reasoning RL, each judged by comparing the older and newer halves of the window:
- length hacking: truncation (no EOS: length at the cap) common and rising;
- reward saturation: mean reward above the threshold in both halves;
- collapse: repetition up while the variety of reflection keywords goes down.

Served by several worker processes (`workers: N`), each keeps the window of what it saw; the
view joins theirs by arrival time into one window of the last N rewards of the whole service.
"""

from __future__ import annotations

import collections
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import APIRouter, Response

from arbiter.contract import Result, Sample, Status
from services.common.fleet import WORKERS_HEADER, FleetScope
from services.gateway.routing import datasource_of

MIN_SAMPLES = 64  # below this a window says nothing worth a warning


@dataclass(frozen=True, slots=True)
class _Record:
    at: float  # wall-clock arrival (time.time): sibling workers' windows join in this order
    reward: float
    score: float
    datasource: str
    words: float
    truncated: bool
    reflective: bool
    repetition: float
    keywords: frozenset[str]
    status: Status


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


class RollingStats:
    def __init__(self, window: int, saturation: float = 0.95, truncation: float = 0.2) -> None:
        self._records: collections.deque[_Record] = collections.deque(maxlen=window)
        self.window = window
        self.saturation = saturation
        self.truncation = truncation
        self.total = 0

    def observe(self, samples: Sequence[Sample], results: Sequence[Result]) -> None:
        now = time.time()
        for sample, result in zip(samples, results, strict=True):
            logs = result.logs
            self._records.append(
                _Record(
                    at=now,
                    reward=result.reward,
                    score=result.score,
                    datasource=datasource_of(sample) or "(none)",
                    words=logs.get("response/words", 0.0),
                    truncated=logs.get("response/stopped", 1.0) == 0.0,
                    reflective=logs.get("reflect/any", 0.0) > 0,
                    keywords=frozenset(
                        k
                        for k, v in logs.items()
                        if k.startswith("reflect/") and v > 0 and k not in _AGGREGATES
                    ),
                    repetition=logs.get("response/repetition", 0.0),
                    status=result.status,
                )
            )
            self.total += 1

    def export(self) -> bytes:
        """This window, raw, for a sibling worker's merged view (see `merged`)."""
        return orjson.dumps({"total": self.total, "records": list(self._records)}, default=sorted)

    def merged(self, parts: Sequence[bytes]) -> dict[str, Any]:
        """The summary of sibling workers' exported windows joined: the last `window` rewards of
        all of them by arrival time, and every sample any of them has seen."""
        records: list[_Record] = []
        total = 0
        for part in parts:
            data = orjson.loads(part)
            total += int(data["total"])
            for row in data["records"]:
                row.update(keywords=frozenset(row["keywords"]), status=Status(row["status"]))
                records.append(_Record(**row))
        records.sort(key=lambda r: r.at)
        return self.summary(records[-self.window :], total)

    def summary(self, records: list[_Record] | None = None, total: int | None = None) -> dict[str, Any]:
        records = list(self._records) if records is None else records
        n = len(records)
        rewards = [r.reward for r in records]
        per_source: dict[str, list[float]] = collections.defaultdict(list)
        for r in records:
            per_source[r.datasource].append(r.score)
        statuses = collections.Counter(r.status.value for r in records)
        return {
            "window": n,
            "window_size": self.window,
            "samples_seen": self.total if total is None else total,
            "reward_mean": _mean(rewards),
            "reward_std": statistics.pstdev(rewards) if n > 1 else 0.0,
            "accuracy": _mean([r.score for r in records]),
            "accuracy_by_datasource": {
                k: {"accuracy": _mean(v), "n": len(v)} for k, v in sorted(per_source.items())
            },
            "response_words_mean": _mean([r.words for r in records]),
            "truncated_rate": _mean([float(r.truncated) for r in records]),
            "reflection_rate": _mean([float(r.reflective) for r in records]),
            "repetition_mean": _mean([r.repetition for r in records]),
            "timeout_rate": statuses.get("TIMEOUT", 0) / n if n else 0.0,
            "error_rate": (n - statuses.get("OK", 0)) / n if n else 0.0,
            "statuses": dict(statuses),
            "warnings": self.warnings(records),
        }

    def warnings(self, records: list[_Record]) -> list[dict[str, str]]:
        if len(records) < MIN_SAMPLES:
            return []
        half = len(records) // 2
        old, new = records[:half], records[half:]
        found: list[dict[str, str]] = []
        old_trunc = _mean([float(r.truncated) for r in old])
        new_trunc = _mean([float(r.truncated) for r in new])
        if new_trunc >= self.truncation and new_trunc > old_trunc:
            old_words, new_words = _mean([r.words for r in old]), _mean([r.words for r in new])
            found.append(
                {
                    "kind": "length_hacking",
                    "message": f"{new_trunc:.0%} of recent responses hit the length cap "
                    f"(was {old_trunc:.0%}); "
                    f"mean length {old_words:.0f} -> {new_words:.0f} words",
                }
            )
        old_reward, new_reward = _mean([r.reward for r in old]), _mean([r.reward for r in new])
        if min(old_reward, new_reward) > self.saturation:
            found.append(
                {
                    "kind": "reward_saturation",
                    "message": f"mean reward above {self.saturation} across the window "
                    f"({old_reward:.3f}, {new_reward:.3f}): the reward no longer separates samples",
                }
            )
        old_rep, new_rep = _mean([r.repetition for r in old]), _mean([r.repetition for r in new])
        old_variety = len(frozenset().union(*(r.keywords for r in old)))
        new_variety = len(frozenset().union(*(r.keywords for r in new)))
        if new_rep > old_rep + 0.05 and new_rep > 0.2 and new_variety < old_variety:
            found.append(
                {
                    "kind": "collapse",
                    "message": f"repetition {old_rep:.2f} -> {new_rep:.2f} while reflection keywords in use "
                    f"fell {old_variety} -> {new_variety}",
                }
            )
        return found

    def router(self, fleet: FleetScope | None = None) -> APIRouter:
        """GET /v1/stats; with a `fleet` (sibling workers on the same port), over all of them."""
        router = APIRouter()
        if fleet is not None:
            fleet.provide("stats", self.export)

        @router.get("/v1/stats")
        async def stats() -> Response:
            headers: dict[str, str] = {}
            if fleet is None:
                summary = self.summary()
            else:
                gathered = await fleet.gather("stats")
                summary = self.merged(gathered.parts)
                headers[WORKERS_HEADER] = gathered.coverage
            finite = {
                k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in summary.items()
            }
            return Response(orjson.dumps(finite), media_type="application/json", headers=headers)

        return router


_AGGREGATES = frozenset({"reflect/total", "reflect/any"})
