"""Process reward models' steps: a response cut into steps, and step scores made one reward.

Pure functions (no tokenizer, no torch). A PRM reads a score after every step, at a separator
the service places; which text is a step is decided here, linearly in the response's length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# A blank line: a line break, spaces or tabs only, a line break (no nested repetition: linear).
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def split_steps(response: str, how: str, separator: str) -> list[str]:
    """The response's steps, stripped, empty ones dropped.

    `blank_lines` (Qwen2.5-Math-PRM's recipe: steps are paragraphs), `lines` (every line
    break), `separator` (the response writes `separator` after its steps itself).
    """
    if how == "blank_lines":
        parts = _BLANK_LINE.split(response)
    elif how == "lines":
        parts = response.split("\n")
    elif how == "separator":
        parts = response.split(separator) if separator else [response]
    else:
        raise ValueError(f"unknown step split {how!r}")
    return [part.strip() for part in parts if part.strip()]


def aggregate(scores: Sequence[float], how: str) -> float:
    """One reward from step scores (each in [0, 1]): the weakest step (min), the last, the mean,
    or the product (the chance that every step is good, if they were independent)."""
    if not scores:
        raise ValueError("no step scores to aggregate")
    if how == "min":
        return min(scores)
    if how == "last":
        return scores[-1]
    if how == "mean":
        return math.fsum(scores) / len(scores)
    if how == "product":
        return math.prod(scores)
    raise ValueError(f"unknown aggregate {how!r}")


def first_bad(scores: Sequence[float], threshold: float) -> int:
    """The 1-based index of the first step scored below `threshold`; 0 when none is."""
    for index, score in enumerate(scores, start=1):
        if score < threshold:
            return index
    return 0
