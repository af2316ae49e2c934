"""veRL custom reward: `custom_reward_function.path=trainer/verl_reward.py`, name `compute_score`
(or `compute_score_async` where the reward manager awaits).

Returns a dict: `score` (veRL's reward) plus every Arbiter log as reward_extra_info,
and `acc` = Arbiter's score (correctness), which veRL's validation reports.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from services.common.contract import Sample
from trainer.gateway import connection


def _sample(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None
) -> Sample:
    label = (
        ground_truth
        if isinstance(ground_truth, str)
        else json.dumps(ground_truth, ensure_ascii=False, default=str)
    )
    prompt = (extra_info or {}).get("prompt", "")
    metadata = {"datasource": str(data_source)} if data_source else {}
    return Sample(
        prompt=prompt if isinstance(prompt, str) else str(prompt),
        response=solution_str,
        label=label,
        metadata=metadata,
    )


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
