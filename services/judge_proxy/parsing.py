"""Reading a verdict out of judge text: scores, labels, refusals, logprob-weighted scores.

Each parser returns the value and where in the text it stands, so the logprob step can
find the token that carried it. A verdict that cannot be read raises `ParseError`; no
parser ever returns a default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Bump when a parser changes what it reads: cached verdicts of older parsers stop matching.
PARSER_VERSION = "1"

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r'"(?:score|rating)"\s*:\s*"?' + _NUMBER, re.IGNORECASE),  # JSON, fenced or bare
    re.compile(r"\[\[\s*" + _NUMBER + r"\s*(?:/\s*\d+(?:\.\d+)?\s*)?\]\]"),  # [[8]], [[8/10]]
    re.compile(r"\[RESULT\]\s*:?\s*" + _NUMBER, re.IGNORECASE),  # Prometheus-style
    re.compile(
        r"\b(?:rating|score|grade|final score|overall score)\s*[:=]?\s*\**\s*\[?" + _NUMBER,
        re.IGNORECASE,
    ),
)
_OUT_OF = re.compile(_NUMBER + r"\s*/\s*(\d+(?:\.\d+)?)")
_DENOMINATOR = re.compile(r"\s*/\s*(\d+(?:\.\d+)?)")
_BARE = re.compile(r"\s*\**\s*" + _NUMBER + r"\s*\**\s*\.?\s*")

_REFUSAL = re.compile(
    r"\b(?:I(?:'m| am) (?:sorry|unable|not able)|I (?:can(?:no|')t|won't|will not|must decline)"
    r"|as an AI(?: language model)?|I'm not comfortable)\b",
    re.IGNORECASE,
)


class ParseError(ValueError):
    """The judge's text holds no readable verdict."""


@dataclass(frozen=True, slots=True)
class Found:
    value: float
    text: str  # the verdict as written ("8", "A")
    start: int  # offset of `text` in the judge's output


def parse_score(text: str, low: float, high: float) -> Found:
    """The judge's score on the [low, high] scale; the last statement of the strongest form wins."""
    for pattern in _SCORE_PATTERNS:
        matches = list(pattern.finditer(text))
        if matches:
            return _in_range(matches[-1], 1, low, high)
    for match in reversed(list(_OUT_OF.finditer(text))):
        if float(match.group(2)) == high:  # "8/10" on a 1-10 scale; "4/5" there is ambiguous
            return _in_range(match, 1, low, high)
    bare = _BARE.fullmatch(text)
    if bare is not None:
        return _in_range(bare, 1, low, high)
    raise ParseError(f"no score in the judge's reply: {_excerpt(text)}")


def _in_range(match: re.Match[str], group: int, low: float, high: float) -> Found:
    scale = _DENOMINATOR.match(match.string, match.end(group))
    if scale is not None and float(scale.group(1)) != high:
        raise ParseError(
            f"score {match.group(group)}/{scale.group(1)} is on another scale than [{low:g}, {high:g}]"
        )
    value = float(match.group(group))
    if not (low <= value <= high and math.isfinite(value)):
        raise ParseError(f"score {match.group(group)} is outside the rubric's range [{low:g}, {high:g}]")
    return Found(value=value, text=match.group(group), start=match.start(group))


def parse_label(text: str, labels: Sequence[str]) -> Found:
    """Which of `labels` the judge chose (value is its index); the last explicit mark wins."""
    alternatives = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    patterns = (
        re.compile(r'"(?:label|verdict|answer|choice)"\s*:\s*"(' + alternatives + r')"', re.IGNORECASE),
        re.compile(r"\[\[\s*(" + alternatives + r")\s*\]\]"),
        re.compile(r"\[RESULT\]\s*:?\s*(" + alternatives + r")\b"),
        re.compile(
            r"\b(?:label|verdict|answer|decision|choice)\s*[:=]\s*\**\s*\[?(" + alternatives + r")\b",
            re.IGNORECASE,
        ),
    )
    for pattern in patterns:
        matches = list(pattern.finditer(text))
        if matches:
            return _label_found(matches[-1], labels)
    whole = re.fullmatch(r"\s*\**\s*(" + alternatives + r")\s*\**\s*\.?\s*", text, re.IGNORECASE)
    if whole is not None:
        return _label_found(whole, labels)
    # Last resort for word labels only: one label, and only one, appears as a word.
    wordy = [label for label in labels if len(label) > 1]
    seen = {m.group(1) for m in re.finditer(r"\b(" + "|".join(map(re.escape, wordy)) + r")\b", text)}
    if wordy and len(seen) == 1:
        match = list(re.finditer(r"\b(" + re.escape(seen.pop()) + r")\b", text))[-1]
        return _label_found(match, labels)
    raise ParseError(f"none of the labels {list(labels)} in the judge's reply: {_excerpt(text)}")


def _label_found(match: re.Match[str], labels: Sequence[str]) -> Found:
    said = match.group(1)
    folded = [label.casefold() for label in labels]
    index = labels.index(said) if said in labels else folded.index(said.casefold())
    return Found(value=float(index), text=said, start=match.start(1))


def looks_like_refusal(text: str | None, finish_reason: str | None, refusal: str | None) -> bool:
    if refusal or finish_reason == "content_filter":
        return True
    return bool(text) and _REFUSAL.search(text or "") is not None


def expected_value(
    tokens: Sequence[Any],
    text: str,
    found: Found,
    value_of: Callable[[str], float | None],
    min_mass: float = 0.5,
) -> float | None:
    """G-Eval: the probability-weighted value over the alternatives at the verdict's token.

    `tokens` are OpenAI's `logprobs.content` entries as received. Only when one token carries
    the whole verdict (a "10" split into "1" + "0" does not qualify) and the candidates hold at
    least `min_mass` of the probability; else None, and the caller keeps the parsed value.
    """
    try:
        pieces = [entry["token"] for entry in tokens]
        if "".join(pieces) != text:
            return None  # offsets would not line up (byte-split tokens, trimmed text)
        offset = 0
        for entry, piece in zip(tokens, pieces, strict=True):
            end = offset + len(piece)
            if offset <= found.start < end:
                return _expectation(entry, piece, found, value_of, min_mass)
            offset = end
    except (KeyError, TypeError, ValueError):
        return None  # a malformed logprobs block: keep the parsed verdict
    return None


def _expectation(
    entry: Mapping[str, Any],
    piece: str,
    found: Found,
    value_of: Callable[[str], float | None],
    min_mass: float,
) -> float | None:
    if piece.strip() != found.text:
        return None
    alternatives = {str(alt["token"]): float(alt["logprob"]) for alt in entry.get("top_logprobs") or ()}
    alternatives.setdefault(piece, float(entry["logprob"]))
    mass = 0.0
    total = 0.0
    for alternative, logprob in alternatives.items():
        value = value_of(alternative.strip())
        if value is None or not math.isfinite(logprob):
            continue
        weight = math.exp(logprob)
        mass += weight
        total += weight * value
    return total / mass if mass >= min_mass else None


def number_in(low: float, high: float) -> Callable[[str], float | None]:
    def value_of(token: str) -> float | None:
        try:
            value = float(token)
        except ValueError:
            return None
        return value if low <= value <= high and math.isfinite(value) else None

    return value_of


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
