"""A veRL custom reward file for the tests: Arbiter's compute_score, remembering what veRL passed."""

from __future__ import annotations

from typing import Any

from arbiter.adapters.verl_reward import compute_score as arbiter_compute_score

SEEN: list[dict[str, Any]] = []


def compute_score(**kwargs: Any) -> dict[str, Any]:
    SEEN.append(dict(kwargs.get("extra_info") or {}))
    return arbiter_compute_score(**kwargs)
