"""OpenRLHF `reward_func` file: `--reward.remote_url /path/to/trainer/openrlhf_reward_func.py`.

OpenRLHF loads this file in every rollout actor and calls `reward_func(queries, prompts,
labels)` (lists of length 1, through asyncio.to_thread). It sends the samples to the
Arbiter gateway over one persistent gRPC channel per process (address in ARBITER_GATEWAY;
settings in settings.py) and answers through the same OpenRLHF edge as the
gateway's /get_reward (arbiter/openrlhf.py), with the adapters' fixed log keys
(keys.py) on every call, the gateway reachable or not. Needs the arbiter-client distribution
(`pip install ./client`) in the trainer's environment.
"""

from __future__ import annotations

from typing import Any

from arbiter.adapters.gateway import connection
from arbiter.adapters.keys import project
from arbiter.contract import STATUS_KEYS, Result, Status
from arbiter.openrlhf import DEFAULT_EOS_MARKERS, OpenRLHFBatch


def reward_func(queries: list[str], prompts: list[str], labels: list[Any]) -> dict[str, Any]:
    gateway = connection()
    batch = OpenRLHFBatch.parse({"query": queries, "prompts": prompts, "labels": labels}, DEFAULT_EOS_MARKERS)
    scored = gateway.score(batch.samples)

    def unusable(problem: str) -> Result:
        logs = project({STATUS_KEYS[Status.INVALID_INPUT]: 1.0}, gateway.log_keys)
        return Result(
            reward=gateway.fallback_reward, score=0.0, status=Status.INVALID_INPUT, detail=problem, logs=logs
        )

    return batch.respond(scored, unusable, gateway.log_keys, exact=True)
