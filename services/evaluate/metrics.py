"""pass@1, pass@k (unbiased), maj@k and mean reward, per datasource and overall.

A sample is correct when its status is OK and its score reaches the threshold (0/1 graders:
score 1). Samples of one prompt are grouped by the prompt-id column (default: the prompt
text) within a datasource.

maj@k votes over the first k samples of each prompt with at least k. Every correct sample votes
for "the reference" (all are equivalent to it, hence to one another, however written); an
incorrect one votes for the row's answer column (`--answer-key`), else the grader's
`prediction` (the normalised answer it read), else its result detail.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.evaluate.columns import ColumnMap

OVERALL = "all"
_CORRECT_VOTE = "\x00correct"
_MEAN_LOG_PREFIXES = ("reflect/", "response/", "format/")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one prompt with n samples, c correct: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"need 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    # The product form of Chen et al. (2021): stable where the binomials overflow.
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def majority_correct(votes: Sequence[tuple[str, bool]]) -> bool:
    """Whether the most common answer (ties: the one seen first) is a correct one."""
    counts = Counter(key for key, _ in votes)
    best = max(counts.values())
    winner = next(key for key, _ in votes if counts[key] == best)
    group = [ok for key, ok in votes if key == winner]
    return sum(group) * 2 >= len(group)


def default_ks(largest_group: int) -> list[int]:
    ks = [1]
    while ks[-1] * 2 <= largest_group:
        ks.append(ks[-1] * 2)
    if largest_group > ks[-1]:
        ks.append(largest_group)
    return ks


@dataclass
class Group:
    """Running totals of one datasource (or of all rows)."""

    rows: int = 0
    reward_sum: float = 0.0
    score_sum: float = 0.0
    correct: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    log_sums: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    prompts: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)

    def add(self, prompt_id: str, vote: str, ok: bool, record: dict[str, Any]) -> None:
        self.rows += 1
        self.reward_sum += float(record.get("reward", 0.0))
        self.score_sum += float(record.get("score", 0.0))
        self.correct += ok
        self.statuses[str(record.get("status", "?"))] += 1
        for key, value in (record.get("logs") or {}).items():
            if key.startswith(_MEAN_LOG_PREFIXES) and isinstance(value, int | float):
                self.log_sums[key] += float(value)
        self.prompts.setdefault(prompt_id, []).append((vote, ok))

    def metrics(self, ks: Sequence[int]) -> dict[str, Any]:
        n = max(self.rows, 1)
        groups = list(self.prompts.values())
        out: dict[str, Any] = {
            "rows": self.rows,
            "prompts": len(groups),
            "mean_reward": self.reward_sum / n,
            "mean_score": self.score_sum / n,
            "accuracy": self.correct / n,
            "pass@1": _mean(sum(ok for _, ok in g) / len(g) for g in groups),
            "pass@k": {},
            "maj@k": {},
            "statuses": dict(sorted(self.statuses.items())),
            "errors": sum(c for s, c in self.statuses.items() if s != "OK"),
            "timeouts": self.statuses.get("TIMEOUT", 0),
            "mean_logs": {k: v / n for k, v in sorted(self.log_sums.items())},
        }
        for k in ks:
            eligible = [g for g in groups if len(g) >= k]
            passes = (pass_at_k(len(g), sum(ok for _, ok in g), k) for g in eligible)
            majority = (float(majority_correct(g[:k])) for g in eligible)
            out["pass@k"][str(k)] = {"value": _mean(passes), "prompts": len(eligible)}
            out["maj@k"][str(k)] = {"value": _mean(majority), "prompts": len(eligible)}
        return out


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


@dataclass
class Aggregate:
    """Everything the summary and the report need, gathered in one pass over the output."""

    columns: ColumnMap
    threshold: float = 0.5
    groups: dict[str, Group] = field(default_factory=lambda: {OVERALL: Group()})
    rewards: list[float] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)  # response characters, beside `rewards`

    def add(self, record: dict[str, Any]) -> None:
        ok = record.get("status") == "OK" and float(record.get("score", 0.0)) >= self.threshold
        datasource = record.get(self.columns.datasource)
        datasource = datasource if isinstance(datasource, str) and datasource else "default"
        id_column = self.columns.prompt_id or self.columns.prompt
        raw_id = record.get(id_column)
        prompt_id = raw_id if isinstance(raw_id, str) else json.dumps(raw_id, sort_keys=True, default=str)
        vote = self._vote(record, ok)
        self.groups[OVERALL].add(f"{datasource}\x00{prompt_id}", vote, ok, record)
        self.groups.setdefault(datasource, Group()).add(prompt_id, vote, ok, record)
        self.rewards.append(float(record.get("reward", 0.0)))
        self.lengths.append(float((record.get("logs") or {}).get("response/chars", 0.0)))

    def _vote(self, record: dict[str, Any], ok: bool) -> str:
        """Correct answers are all one vote (they equal the reference, however written); a wrong one
        votes by the answer column, else the grader's prediction, else its detail."""
        if ok:
            return _CORRECT_VOTE
        for key in (self.columns.answer, "prediction"):
            value = record.get(key) if key else None
            if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
                return str(value)
        return str(record.get("detail", ""))

    def ks(self, requested: Sequence[int] | None) -> list[int]:
        if requested:
            return sorted(set(requested))
        largest = max((len(g) for g in self.groups[OVERALL].prompts.values()), default=1)
        return default_ks(largest)

    def summary(self, requested_ks: Sequence[int] | None = None) -> dict[str, Any]:
        ks = self.ks(requested_ks)
        return {
            "rows": self.groups[OVERALL].rows,
            "ks": ks,
            "correct_threshold": self.threshold,
            "overall": self.groups[OVERALL].metrics(ks),
            "by_datasource": {
                name: group.metrics(ks) for name, group in sorted(self.groups.items()) if name != OVERALL
            },
        }


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            if line.endswith("\n") and line.strip():
                record = json.loads(line)
                if isinstance(record, dict):
                    yield record


def aggregate(path: Path, columns: ColumnMap, threshold: float = 0.5) -> Aggregate:
    result = Aggregate(columns, threshold)
    for record in read_records(path):
        result.add(record)
    return result
