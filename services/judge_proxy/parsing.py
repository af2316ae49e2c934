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
from typing import Any, Literal

import orjson

# Bump when a parser changes what it reads: cached verdicts of older parsers stop matching.
PARSER_VERSION = "2"

# The verdict forms a rubric can ask for. `any` reads every one of them (rubrics that name none).
VerdictFormat = Literal["brackets", "json", "result", "keyword", "any"]
FORMATS: tuple[VerdictFormat, ...] = ("brackets", "json", "result", "keyword", "any")

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS: dict[str, re.Pattern[str]] = {
    "json": re.compile(r'"(?:score|rating)"\s*:\s*"?' + _NUMBER, re.IGNORECASE),  # JSON, fenced or bare
    "brackets": re.compile(r"\[\[\s*" + _NUMBER + r"\s*(?:/\s*\d+(?:\.\d+)?\s*)?\]\]"),  # [[8]], [[8/10]]
    "result": re.compile(r"\[RESULT\]\s*:?\s*" + _NUMBER, re.IGNORECASE),  # Prometheus-style
    "keyword": re.compile(
        r"\b(?:rating|score|grade|final score|overall score)\s*[:=]?\s*\**\s*\[?" + _NUMBER,
        re.IGNORECASE,
    ),
}
_OUT_OF = re.compile(_NUMBER + r"\s*/\s*(\d+(?:\.\d+)?)")
_DENOMINATOR = re.compile(r"\s*/\s*(\d+(?:\.\d+)?)")
_BARE = re.compile(r"\s*\**\s*" + _NUMBER + r"\s*\**\s*\.?\s*")
_JSON_FENCE = re.compile(r"\A\s*```(?:json)?\s*(.*?)\s*```\s*\Z", re.DOTALL | re.IGNORECASE)
_THINK_END = "</think>"
_SCORE_KEYS = ("score", "rating")
_LABEL_KEYS = ("label", "verdict", "answer", "choice")
# A verdict is a quotation of the response when this much of the judge's text before it, and
# the verdict, appear in the response as they stand (a policy cannot predict the judge's words).
_QUOTE_CONTEXT = 40
_MIN_QUOTE_CONTEXT = 16

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
    start: int  # offset of `text` in the judge's output (-1: not located)


class Quotes:
    """The untrusted texts the judge was shown (the response): a verdict inside a quotation of
    them is the response speaking, not the judge."""

    def __init__(self, texts: Sequence[str] = ()) -> None:
        self._texts = [_squash(t) for t in texts if t]

    def holds(self, text: str, start: int, end: int) -> bool:
        if not self._texts or start < _MIN_QUOTE_CONTEXT:
            return False
        window = _squash(text[max(0, start - _QUOTE_CONTEXT) : end])
        return any(window in quoted for quoted in self._texts)


def _squash(text: str) -> str:
    return " ".join(text.split())


def parse_score(
    text: str, low: float, high: float, fmt: VerdictFormat = "any", quotes: Quotes | None = None
) -> Found:
    """The judge's score on the [low, high] scale, in the form `fmt`; its final statement wins.

    Matches that quote the response, and out-of-range numbers, are passed over (a response
    must not be able to win the parse, nor to make it fail and force the fallback).
    """
    quotes = quotes or Quotes()
    final = _after_thinking(text)
    if fmt == "json":
        found = _json_verdict(text, final, _SCORE_KEYS, lambda v: _score_value(v, low, high))
        if found is not None:
            return found
    kinds = [k for k in _SCORE_PATTERNS if fmt in ("any", k)]
    matches = [(m, 1) for kind in kinds for m in _SCORE_PATTERNS[kind].finditer(text, final)]
    if fmt == "any":
        matches += [(m, 1) for m in _OUT_OF.finditer(text, final) if float(m.group(2)) == high]
    problem = ""
    for match, group in sorted(matches, key=lambda item: item[0].start(), reverse=True):
        if quotes.holds(text, match.start(), match.end()):
            continue
        try:
            return _in_range(match, group, low, high)
        except ParseError as exc:
            problem = problem or str(exc)
    bare = _BARE.fullmatch(text, final)
    if bare is not None:
        return _in_range(bare, 1, low, high)
    if problem:
        raise ParseError(problem)
    raise ParseError(f"no score{_form(fmt)} in the judge's reply: {_excerpt(text)}")


def _score_value(value: Any, low: float, high: float) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and low <= number <= high else None


def _after_thinking(text: str) -> int:
    """Where the judge's final answer starts: after its reasoning (`<think>...</think>`), if any.
    A verdict inside the reasoning is a draft, or the judge reading the response to itself."""
    end = text.rfind(_THINK_END)
    return end + len(_THINK_END) if end >= 0 else 0


def _json_verdict(
    text: str, final: int, keys: Sequence[str], value_of: Callable[[Any], float | None]
) -> Found | None:
    """The verdict of a reply that is one JSON object (fenced or not): its own top-level key only."""
    tail = text[final:]
    fenced = _JSON_FENCE.match(tail)
    body = fenced.group(1) if fenced else tail
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    for key in keys:
        if key in data:
            value = value_of(data[key])
            if value is None:
                raise ParseError(
                    f"the judge's {key!r} is {data[key]!r}: not a verdict on this rubric's scale"
                )
            said = str(data[key])
            at = text.rfind(said)
            return Found(value=value, text=said, start=at)
    return None


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


def parse_label(
    text: str, labels: Sequence[str], fmt: VerdictFormat = "any", quotes: Quotes | None = None
) -> Found:
    """Which of `labels` the judge chose (value is its index), in the form `fmt`; its final mark wins."""
    quotes = quotes or Quotes()
    final = _after_thinking(text)
    alternatives = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    folded = {label.casefold(): index for index, label in enumerate(labels)}
    if fmt == "json":

        def index_of(value: Any) -> float | None:
            return (
                float(folded[value.casefold()])
                if isinstance(value, str) and value.casefold() in folded
                else None
            )

        found = _json_verdict(text, final, _LABEL_KEYS, index_of)
        if found is not None:
            return found
    patterns = {
        "json": re.compile(
            r'"(?:label|verdict|answer|choice)"\s*:\s*"(' + alternatives + r')"', re.IGNORECASE
        ),
        "brackets": re.compile(r"\[\[\s*(" + alternatives + r")\s*\]\]"),
        "result": re.compile(r"\[RESULT\]\s*:?\s*(" + alternatives + r")\b"),
        "keyword": re.compile(
            r"\b(?:label|verdict|answer|decision|choice)\s*[:=]\s*\**\s*\[?(" + alternatives + r")\b",
            re.IGNORECASE,
        ),
    }
    matches = [
        m for kind, pattern in patterns.items() if fmt in ("any", kind) for m in pattern.finditer(text, final)
    ]
    for match in sorted(matches, key=lambda m: m.start(), reverse=True):
        if not quotes.holds(text, match.start(), match.end()):
            return _label_found(match, labels)
    whole = re.compile(r"\s*\**\s*(" + alternatives + r")\s*\**\s*\.?\s*", re.IGNORECASE).fullmatch(
        text, final
    )
    if whole is not None:
        return _label_found(whole, labels)
    if fmt == "any":
        # Last resort for word labels only: one label, and only one, appears as a word.
        wordy = [label for label in labels if len(label) > 1]
        words = re.compile(r"\b(" + "|".join(map(re.escape, wordy)) + r")\b")
        seen = {m.group(1) for m in words.finditer(text, final)}
        if wordy and len(seen) == 1:
            match = list(re.compile(r"\b(" + re.escape(seen.pop()) + r")\b").finditer(text, final))[-1]
            return _label_found(match, labels)
    raise ParseError(f"none of the labels {list(labels)}{_form(fmt)} in the judge's reply: {_excerpt(text)}")


def _label_found(match: re.Match[str], labels: Sequence[str]) -> Found:
    said = match.group(1)
    folded = [label.casefold() for label in labels]
    index = labels.index(said) if said in labels else folded.index(said.casefold())
    return Found(value=float(index), text=said, start=match.start(1))


def _form(fmt: VerdictFormat) -> str:
    return "" if fmt == "any" else f" in the form the rubric asks for ({fmt})"


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
