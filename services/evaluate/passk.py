"""pass@1, pass@k (unbiased), maj@k and mean reward, per datasource and overall.

A sample is correct when its status is OK and its score reaches the threshold (0/1 graders:
score 1). Samples of one prompt are grouped by the prompt-id column (default: the prompt
text) within a datasource.

Rows without a group: an INVALID_INPUT row with no prompt id (a line that is not JSON, a row
without the response column and no id) is *unusable*: it is counted in `rows`, `statuses` and
`errors` and as `unusable_rows`, and left out of everything else (means, pass@k, maj@k), so a
broken line never becomes a fake problem that nobody solved. Any other row with no prompt id
and no prompt is its own problem (one sample: it counts for pass@1 only) and the summary warns
that pass@k for k > 1 needs `--prompt-id-key`.

maj@k is order-free: the expected majority vote of k samples drawn without replacement from
the prompt's n (exact, over all C(n, k) subsets; a tie between the top answers counts as the
share a random tie-break gives the correct one). Row order never changes it; with k = n it is
the plain majority of all samples. Every correct sample votes for "the reference" (all are
equivalent to it, hence to one another, however written); an incorrect one votes for the row's
answer column (`--answer-key`), else the grader's `prediction` (the normalised answer it read),
else its result detail.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
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


@lru_cache(maxsize=8192)
def expected_majority(correct: int, wrong: tuple[int, ...], k: int) -> float:
    """Chance that the majority of k samples, drawn without replacement, is the correct answer.

    `correct` samples share the correct answer; `wrong[i]` samples share wrong answer i. Exact:
    for each count x of correct samples drawn, count the ways to draw the other k - x so that no
    wrong answer gets more than x (answers with fewer than x samples never can; the others go
    through a small dynamic program that also counts the wrong answers tied at x, each tie
    splitting the win evenly). Exact integers throughout, one float at the end.
    """
    n = correct + sum(wrong)
    if not 0 < k <= n:
        raise ValueError(f"need 0 < k <= n (n={n}, k={k})")
    total = Fraction(0)
    # x correct drawn leaves k - x to draw from the n - correct wrong ones: x >= k - (n - correct).
    for x in range(max(1, k - (n - correct)), min(correct, k) + 1):
        rest = k - x
        small = sum(w for w in wrong if w < x)  # can never reach x: any draw of them is fine
        big = [w for w in wrong if w >= x]
        # What the big answers not yet expanded can still take (each at most x): states that could
        # not reach `rest` even with all of it are dropped as they appear.
        room = [0] * (len(big) + 1)
        for i in range(len(big) - 1, -1, -1):
            room[i] = room[i + 1] + x
        ways: dict[tuple[int, int], int] = {(0, 0): 1}  # (drawn so far, answers tied at x) -> ways
        for i, w in enumerate(big):
            combs = [math.comb(w, y) for y in range(x + 1)]
            floor = rest - small - room[i + 1]  # the least `drawn` that can still be completed
            step: defaultdict[tuple[int, int], int] = defaultdict(int)
            for (drawn, ties), count in ways.items():
                for y in range(max(0, floor - drawn), min(x, rest - drawn) + 1):
                    step[drawn + y, ties + (y == x)] += count * combs[y]
            ways = step
        by_ties: defaultdict[int, int] = defaultdict(int)
        for (drawn, ties), count in ways.items():
            by_ties[ties] += count * math.comb(small, rest - drawn)
        total += math.comb(correct, x) * sum((Fraction(c, t + 1) for t, c in by_ties.items()), Fraction(0))
    return float(total / math.comb(n, k))


def majority_at_k(votes: Sequence[tuple[str, bool]], k: int) -> float:
    """Order-free maj@k of one prompt's votes (see expected_majority)."""
    counts = Counter(key for key, _ in votes)
    correct = counts.pop(_CORRECT_VOTE, 0)
    return expected_majority(correct, tuple(sorted(counts.values())), k)


def default_ks(largest_group: int) -> list[int]:
    ks = [1]
    while ks[-1] * 2 <= largest_group:
        ks.append(ks[-1] * 2)
    if largest_group > ks[-1]:
        ks.append(largest_group)
    return ks


@dataclass(frozen=True, slots=True)
class _Row:
    """What every group needs from one output record, read once (not once per group)."""

    reward: float
    score: float
    status: str
    logs: tuple[tuple[str, float], ...]  # the emergence means' keys only

    @classmethod
    def of(cls, record: dict[str, Any]) -> _Row:
        logs = record.get("logs") or {}
        kept = tuple(
            (key, float(value))
            for key, value in (logs.items() if isinstance(logs, dict) else ())
            if key.startswith(_MEAN_LOG_PREFIXES) and isinstance(value, int | float)
        )
        return cls(
            float(record.get("reward", 0.0)),
            float(record.get("score", 0.0)),
            str(record.get("status", "?")),
            kept,
        )


@dataclass
class Group:
    """Running totals of one datasource (or of all rows)."""

    rows: int = 0
    unusable: int = 0  # INVALID_INPUT rows with no prompt id: in rows and statuses only
    reward_sum: float = 0.0
    score_sum: float = 0.0
    correct: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    log_sums: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    prompts: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)

    def add(self, prompt_id: str, vote: str, ok: bool, row: _Row) -> None:
        self.rows += 1
        self.reward_sum += row.reward
        self.score_sum += row.score
        self.correct += ok
        self.statuses[row.status] += 1
        sums = self.log_sums
        for key, value in row.logs:
            sums[key] += value
        self.prompts.setdefault(prompt_id, []).append((vote, ok))

    def add_unusable(self, record: dict[str, Any]) -> None:
        self.rows += 1
        self.unusable += 1
        self.statuses[str(record.get("status", "?"))] += 1

    def metrics(self, ks: Sequence[int]) -> dict[str, Any]:
        n = max(self.rows - self.unusable, 1)
        groups = list(self.prompts.values())
        out: dict[str, Any] = {
            "rows": self.rows,
            "unusable_rows": self.unusable,
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
            majority = (majority_at_k(g, k) for g in eligible)
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
    seen: int = 0  # rows added, unusable ones included
    without_id: int = 0  # usable rows that had no prompt id and no prompt: each its own problem

    def add(self, record: dict[str, Any]) -> None:
        self.seen += 1
        ok = record.get("status") == "OK" and float(record.get("score", 0.0)) >= self.threshold
        datasource = record.get(self.columns.datasource)
        has_source = isinstance(datasource, str) and bool(datasource)
        datasource = datasource if isinstance(datasource, str) and datasource else "default"
        id_column = self.columns.prompt_id or self.columns.prompt
        raw_id = record.get(id_column)
        if raw_id is None or raw_id == "":
            if record.get("status") == "INVALID_INPUT":  # a broken row: never a problem of its own
                self.groups[OVERALL].add_unusable(record)
                if has_source:
                    self.groups.setdefault(datasource, Group()).add_unusable(record)
                return
            self.without_id += 1
            prompt_id = f"\x00row {self.seen}"  # no way to know its siblings: a problem of its own
        else:
            prompt_id = raw_id if isinstance(raw_id, str) else json.dumps(raw_id, sort_keys=True, default=str)
        vote = self._vote(record, ok)
        row = _Row.of(record)
        self.groups[OVERALL].add(f"{datasource}\x00{prompt_id}", vote, ok, row)
        self.groups.setdefault(datasource, Group()).add(prompt_id, vote, ok, row)
        self.rewards.append(row.reward)
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

    def warnings(self) -> list[str]:
        """What a reader of the numbers must know: rows left out, rows that could not be grouped."""
        out = []
        unusable = self.groups[OVERALL].unusable
        if unusable:
            out.append(
                f"{unusable} unusable row(s) (INVALID_INPUT, no prompt id) left out of the means, "
                "pass@k and maj@k; they are counted in statuses and errors"
            )
        if self.without_id:
            column = self.columns.prompt_id or self.columns.prompt
            out.append(
                f"{self.without_id} row(s) have no {column!r} to group them by: each is its own problem, "
                "so pass@k and maj@k for k > 1 leave them out; pass --prompt-id-key to group samples"
            )
        return out

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
            "maj_at_k": "expected majority over all k-subsets of each prompt's samples (order-free)",
            "warnings": self.warnings(),
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
