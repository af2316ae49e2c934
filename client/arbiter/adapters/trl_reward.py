"""TRL GRPOTrainer reward functions backed by the Arbiter gateway.

    from arbiter.adapters.trl_reward import arbiter_reward
    trainer = GRPOTrainer(..., reward_funcs=[arbiter_reward(label_column="answer")])

One gateway call scores the whole batch. A sample the gateway could not grade (any
status but OK, the gateway unreachable included) comes back as None, which TRL reads as
"unscorable" and leaves out, instead of a fake zero. The outage policy (how long a call
waits for the gateway) is settings.py's ARBITER_GATEWAY_WAIT_S.
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import Callable, Sequence
from typing import Any

from arbiter.adapters.gateway import connection
from arbiter.contract import Sample, Status

RewardFunc = Callable[..., list[float | None]]
# The share of a batch Arbiter could not score (None rewards), logged beside TRL's own metrics.
UNSCORED_METRIC = "arbiter/unscored"


def _text(item: Any) -> str:
    """Plain text of a TRL prompt/completion: a string, or conversational messages."""
    if isinstance(item, str):
        return item
    if isinstance(item, Sequence):
        return "\n".join(str(m.get("content", "")) for m in item if isinstance(m, dict))
    return str(item)


def _label(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def arbiter_reward(label_column: str = "label", datasource_column: str = "datasource") -> RewardFunc:
    """A TRL reward function reading the reference from `label_column` of the dataset."""

    def reward(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        labels = columns.get(label_column) or [None] * len(completions)
        sources = columns.get(datasource_column) or [None] * len(completions)
        texts = [_text(prompt) for prompt in prompts]
        # GRPOTrainer hands over whole groups (num_generations per prompt): a group-aware recipe
        # computes its terms in this one call (docs/group-rewards.md).
        sizes = collections.Counter(texts)
        samples = [
            Sample(
                prompt=text,
                response=_text(completion),
                label=_label(label),
                metadata={"datasource": str(source), "group_size": str(sizes[text])}
                if source
                else {"group_size": str(sizes[text])},
            )
            for text, completion, label, source in zip(texts, completions, labels, sources, strict=True)
        ]
        results = connection().score(samples)
        log_metric = columns.get("log_metric")  # TRL >= 1.x hands reward functions a metric logger
        if callable(log_metric) and results:
            log_metric(UNSCORED_METRIC, sum(r.status is not Status.OK for r in results) / len(results))
        return [r.reward if r.status is Status.OK else None for r in results]

    reward.__name__ = f"arbiter_{label_column}"  # TRL logs each reward function under its name
    return reward


def arbiter_reward_async(
    label_column: str = "label", datasource_column: str = "datasource"
) -> Callable[..., Any]:
    """The same, as a coroutine function for TRL versions that await reward functions."""
    sync = arbiter_reward(label_column, datasource_column)

    async def reward(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        return await asyncio.to_thread(sync, prompts, completions, **columns)

    reward.__name__ = sync.__name__
    return reward
