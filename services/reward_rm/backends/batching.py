"""Token-budget batching (as in HF text-embeddings-inference's queue): sort, then pack.

Padding costs compute: a batch costs `len(batch) * longest`. Sorting by length puts
similar lengths together; a batch closes when it would exceed the token budget (memory,
latency), `max_batch` samples, or `max_padding` as the share of its tokens that are padding.
"""

from __future__ import annotations

from collections.abc import Sequence


def plan_batches(
    lengths: Sequence[int], token_budget: int, max_batch: int, max_padding: float = 1.0
) -> list[list[int]]:
    """Indices grouped into forward passes; one item longer than the budget runs alone."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
    batches: list[list[int]] = []
    current: list[int] = []
    longest = real = 0
    for index in order:
        length = lengths[index]
        if current:
            # Longest first: the first item of a batch sets its padded length.
            padded = (len(current) + 1) * longest
            if (
                padded > token_budget
                or len(current) >= max_batch
                or padded - (real + length) > max_padding * padded
            ):
                batches.append(current)
                current = []
        if not current:
            longest, real = length, 0
        current.append(index)
        real += length
    if current:
        batches.append(current)
    return batches
