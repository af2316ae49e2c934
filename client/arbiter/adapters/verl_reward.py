"""veRL custom reward backed by the Arbiter gateway.

veRL >= 0.7 (0.9 requires it; the top-level legacy key is silently ignored there):
    reward.custom_reward_function.path=trainer/verl_reward.py reward.custom_reward_function.name=compute_score
veRL < 0.7:
    custom_reward_function.path=trainer/verl_reward.py custom_reward_function.name=compute_score
`compute_score_async` is the same as a coroutine (veRL awaits it instead of using a thread).

Returns a dict on every call with the same keys, the gateway reachable or not: `score`
(veRL's reward), `acc` (Arbiter's score, e.g. 0/1 correctness; veRL's validation reports
it) and the adapters' fixed log keys (keys.py) as reward_extra_info. A sample
Arbiter could not score gets ARBITER_FALLBACK_REWARD with `status/ok = 0` (and
`trainer/unreachable = 1` when the gateway was not reached): veRL has no "unscorable"
reward, so the flag is how to tell and filter them.

The prompt: veRL does not pass it to reward functions; rows usually carry it in
`extra_info` (`prompt`, or `question` as in veRL's own gsm8k/math preprocessing).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from arbiter.adapters.gateway import connection
from arbiter.contract import Sample

# extra_info keys that hold the prompt, in order of preference.
PROMPT_KEYS = ("prompt", "question", "problem", "query")


def prompt_of(extra_info: Mapping[str, Any] | None) -> str:
    """The prompt text from a veRL row's extra_info: a string, or chat messages."""
    for key in PROMPT_KEYS:
        value = (extra_info or {}).get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list | tuple) and value:
            return "\n".join(str(m.get("content", "")) for m in value if isinstance(m, Mapping))
    return ""


def _sample(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None
) -> Sample:
    if ground_truth is None:
        label = ""
    elif isinstance(ground_truth, str):
        label = ground_truth
    else:
        label = json.dumps(ground_truth, ensure_ascii=False, default=str)
    metadata = {"datasource": str(data_source)} if data_source else {}
    group = (extra_info or {}).get("group_id")  # veRL's uid of the prompt's group (verl_manager.py)
    if isinstance(group, str) and group:
        metadata["group_id"] = group
    return Sample(prompt=prompt_of(extra_info), response=solution_str, label=label, metadata=metadata)


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None, **_: Any
) -> dict[str, Any]:
    result = connection().score([_sample(data_source, solution_str, ground_truth, extra_info)])[0]
    return {"score": result.reward, "acc": result.score, **result.logs}


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth, extra_info, **kw)
