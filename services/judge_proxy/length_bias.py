"""Reward-length correlation: the number that shows a judge being gamed by longer answers."""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None for fewer than 3 points or a constant series."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    return _from_sums(
        n,
        sum(xs),
        sum(ys),
        sum(x * x for x in xs),
        sum(y * y for y in ys),
        sum(x * y for x, y in zip(xs, ys, strict=True)),
    )


def _from_sums(n: int, sx: float, sy: float, sxx: float, syy: float, sxy: float) -> float | None:
    if n < 3:
        return None
    var_x = sxx - sx * sx / n
    var_y = syy - sy * sy / n
    if var_x <= 1e-12 * max(1.0, sxx) or var_y <= 1e-12 * max(1.0, syy):
        return None
    r = (sxy - sx * sy / n) / math.sqrt(var_x * var_y)
    return max(-1.0, min(1.0, r))


class LengthCorrelation:
    """Per batch, and over a rolling window of the last `window` graded samples (running sums,
    so a batch costs its own size, not the window's)."""

    def __init__(self, window: int) -> None:
        self._window = window
        self._points: collections.deque[tuple[float, float]] = collections.deque()
        self._sums = [0.0, 0.0, 0.0, 0.0, 0.0]  # x, y, xx, yy, xy
        self._added = 0

    def _add(self, x: float, y: float, sign: float) -> None:
        s = self._sums
        s[0] += sign * x
        s[1] += sign * y
        s[2] += sign * x * x
        s[3] += sign * y * y
        s[4] += sign * x * y

    def observe(
        self, lengths: Sequence[float], rewards: Sequence[float]
    ) -> tuple[float | None, float | None]:
        for x, y in zip(lengths, rewards, strict=True):
            self._points.append((x, y))
            self._add(x, y, 1.0)
            if len(self._points) > self._window:
                old_x, old_y = self._points.popleft()
                self._add(old_x, old_y, -1.0)
        self._added += len(lengths)
        if self._added >= 100_000:  # re-sum now and then: no drift from float cancellation
            self._added = 0
            self._sums = [0.0] * 5
            for x, y in self._points:
                self._add(x, y, 1.0)
        window = _from_sums(len(self._points), *self._sums)
        return pearson(lengths, rewards), window
