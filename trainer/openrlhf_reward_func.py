"""OpenRLHF `reward_func` file: `--reward.remote_url /path/to/trainer/openrlhf_reward_func.py`.

OpenRLHF loads this file in every rollout actor and calls `reward_func(queries, prompts,
labels)` (lists of length 1, through asyncio.to_thread). It sends the samples to the
Arbiter gateway over one persistent gRPC channel per process (address in ARBITER_GATEWAY)
and answers in the same shape as the gateway's /get_reward. Needs `pip install arbiter`
in the trainer's environment.
"""

from __future__ import annotations

from typing import Any

from services.common.contract import Result, Status
from services.common.engine import STATUS_KEYS
from services.common.openrlhf import merge_results, to_response, to_samples
from services.common.settings import DEFAULT_EOS_MARKERS
from trainer.gateway import connection


def reward_func(queries: list[str], prompts: list[str], labels: list[Any]) -> dict[str, Any]:
    gateway = connection()
    items = to_samples({"query": queries, "prompts": prompts, "labels": labels}, DEFAULT_EOS_MARKERS)
    scored = gateway.score([item.sample for item in items if item.sample is not None])

    def unusable(problem: str) -> Result:
        keys = dict.fromkeys(scored[0].logs, 0.0) if scored else {}
        return Result(
            reward=gateway.fallback_reward,
            score=0.0,
            status=Status.INVALID_INPUT,
            detail=problem,
            logs={**keys, STATUS_KEYS[Status.INVALID_INPUT]: 1.0},
        )

    results = merge_results(items, scored, unusable)
    return to_response(results, list(results[0].logs) if results else [])
