"""The backend interface: what the RM grader needs from whatever runs the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class BackendError(RuntimeError):
    """The backend could not score a batch (model missing, server down, bad reply)."""


class RMBackend(Protocol):
    """Runs a reward model over already-tokenized inputs.

    `rewards` returns one value per input, in order: the value head at the last token,
    normalized by the checkpoint's mean/std when `normalized` is true, never passed
    through an activation. Batching, padding and concurrency are the backend's business.
    """

    @property
    def name(self) -> str: ...

    @property
    def normalized(self) -> bool: ...

    async def start(self) -> None: ...

    async def rewards(self, inputs: Sequence[Sequence[int]]) -> list[float]: ...

    async def step_scores(
        self, inputs: Sequence[Sequence[int]], positions: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """A process reward model's score at each of `positions[i]` of input i: P(step is good),
        softmax over two labels (label 1) or the sigmoid of one, never normalized."""
        ...

    async def aclose(self) -> None: ...
