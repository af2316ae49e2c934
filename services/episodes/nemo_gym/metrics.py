"""/aggregate_metrics as NeMo-Gym 0.4.0 computes it by default (pure Python, no pandas).

NeMo-Gym's `compute_aggregate_metrics` (nemo_gym/reward_profile.py) runs its RewardProfiler over
the verify responses: every numeric top-level field (booleans as 0/1) and the response's `usage`
counts become columns; per task (`_ng_task_index`) and over all rollouts it reports
`mean/`, `max/`, `min/`, `median/` and `std/<column>` (sample std; a group where no column has two
values reports std 0 for its complete columns; missing values are skipped and a statistic
without any is left out). Each task's entry also carries its rollouts (`rollout_infos`) and
counts; `key_metrics` are the `mean/` entries. The frameworks tier checks this module against
NeMo-Gym's own function on the same input.

Arbiter's verify answers add `mask_sample` and `arbiter_score` as columns, so `mean/mask_sample`
is the masked fraction.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

TASK = "_ng_task_index"
ROLLOUT = "_ng_rollout_index"
_STATS = ("mean", "max", "min", "median", "std")


class MetricsError(ValueError):
    """Verify responses NeMo-Gym's profiler rejects too (two with the same task and rollout)."""


def _numeric(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value if not (isinstance(value, float) and math.isnan(value)) else None
    return None


def _usage(result: Mapping[str, Any]) -> Mapping[str, Any]:
    response = result.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    return usage if isinstance(usage, Mapping) else {}


def _columns(result: Mapping[str, Any]) -> dict[str, float | int]:
    """A rollout's numeric columns: its top-level numbers, then its usage counts over them."""
    merged = {**result, **_usage(result)}
    columns = {}
    for key, value in merged.items():
        number = _numeric(value)
        if number is not None:
            columns[key] = number
    return columns


def _rollout_info(task: int, rollout: int, result: Mapping[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {"rollout_id": f"{task}:{rollout}", TASK: task, ROLLOUT: rollout}
    if "reward" in result:
        info["reward"] = result.get("reward")
    for source in (_usage(result), result):
        for key, value in source.items():
            if source is result and key in {TASK, ROLLOUT, "reward", "response"}:
                continue
            number = _numeric(value)
            if number is not None:
                info[key] = number
    return info


def _describe(rows: Sequence[Mapping[str, float | int]], columns: Sequence[str]) -> dict[str, Any]:
    described: dict[str, dict[str, float | int]] = {stat: {} for stat in _STATS}
    stds: dict[str, float | None] = {}
    for column in columns:
        values = [row[column] for row in rows if column in row]
        if not values:
            stds[column] = None
            continue
        described["mean"][column] = statistics.fmean(values)
        described["max"][column] = max(values)
        described["min"][column] = min(values)
        described["median"][column] = float(statistics.median(values))
        stds[column] = statistics.stdev(values) if len(values) > 1 else None
    if all(std is None for std in stds.values()):  # pandas: std 0 rather than NaN for no spread
        complete = [c for c in columns if all(c in row for row in rows)]
        stds.update(dict.fromkeys(complete, 0.0))
    described["std"] = {column: std for column, std in stds.items() if std is not None}
    return {f"{stat}/{column}": value for stat in _STATS for column, value in described[stat].items()}


def aggregate(verify_responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """NeMo-Gym's AggregateMetrics (group_level_metrics, agent_metrics, key_metrics) as a dict."""
    if not verify_responses:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    seen: set[tuple[Any, Any]] = set()
    tasks: dict[Any, list[tuple[int, dict[str, float | int], Mapping[str, Any]]]] = defaultdict(list)
    order: list[str] = []
    for result in verify_responses:
        task, rollout = result.get(TASK, 0), result.get(ROLLOUT, 0)
        if (task, rollout) in seen:
            raise MetricsError(f"two verify responses for the same task and rollout ({task}, {rollout})")
        seen.add((task, rollout))
        columns = _columns(result)
        columns.pop(ROLLOUT, None)
        columns.pop(TASK, None)
        order.extend(c for c in columns if c not in order)
        tasks[task].append((rollout, columns, result))

    groups = []
    for task in sorted(tasks):
        rollouts = tasks[task]
        group: dict[str, Any] = {TASK: task, **_describe([c for _, c, _ in rollouts], order)}
        group.update(
            sample={"agent_ref": {"name": "agent"}},
            num_rollouts=len(rollouts),
            expected_num_rollouts=len(rollouts),
            missing_num_rollouts=0,
            reward_profile_completion_pct=100.0,
            rollout_infos=sorted(
                (_rollout_info(task, rollout, result) for rollout, _, result in rollouts),
                key=lambda info: info[ROLLOUT],
            ),
        )
        groups.append(group)
    agent = _describe([columns for rollouts in tasks.values() for _, columns, _ in rollouts], order)
    key = {name: value for name, value in agent.items() if name.startswith("mean/")}
    return {"group_level_metrics": groups, "agent_metrics": agent, "key_metrics": key}
