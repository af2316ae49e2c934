"""Reading a verdict out of judge text: scores, labels, refusals, logprob-weighted scores.

Each parser returns the value and where in the text it stands, so the logprob step can
find the token that carried it. A verdict that cannot be read raises `ParseError`; no
parser ever returns a default.

A judge that quotes the response repeats the response's text, verdict-shaped text included.
Two defences, strongest first:
- a verdict code (`nonce`): every request asks the judge to end with `VERDICT-<code>: <verdict>`,
  the code random per request; the response was written before the code existed, so only the
  judge can write that line. Only the last such line is read.
- without a code (rubrics with `verdict_nonce: false`): a verdict whose text also occurs
  anywhere in the response (case and spacing aside) is never read; when nothing else is left
  the reply holds no verdict (and the response that caused that gets the rubric's lowest reward).

Every pattern runs in linear time: numbers start only where a digit run starts and have
bounded length, and every repetition next to another is possessive.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

# Bump when a parser changes what it reads: cached verdicts of older parsers stop matching.
PARSER_VERSION = "3"

# The verdict forms a rubric can ask for. `any` reads every one of them (rubrics that name none).
VerdictFormat = Literal["brackets", "json", "result", "keyword", "any"]
FORMATS: tuple[VerdictFormat, ...] = ("brackets", "json", "result", "keyword", "any")

# A number starts where a digit run starts (never inside one) and has at most 30 digits a part:
# the regex engine then tries each run once, in bounded time (no quadratic scans of digit runs).
_NUMBER = r"(?<![\d.])(-?\d{1,30}+(?:\.\d{1,30}+)?+)(?![\d])"
_DIGITS = r"\d{1,30}+(?:\.\d{1,30}+)?+"
_SCORE_PATTERNS: dict[str, re.Pattern[str]] = {
    "json": re.compile(r'"(?:score|rating)"\s*+:\s*+"?' + _NUMBER, re.IGNORECASE),  # JSON, fenced or bare
    # [[8]], [[8/10]]
    "brackets": re.compile(r"\[\[\s*+" + _NUMBER + r"\s*+(?:/\s*+" + _DIGITS + r"\s*+)?\]\]"),
    "result": re.compile(r"\[RESULT\]\s*+:?\s*+" + _NUMBER, re.IGNORECASE),  # Prometheus-style
    "keyword": re.compile(
        r"\b(?:rating|score|grade|final score|overall score)\s*+[:=]?\s*+\**+\s*+\[?" + _NUMBER,
        re.IGNORECASE,
    ),
}
_OUT_OF = re.compile(_NUMBER + r"\s*+/\s*+(" + _DIGITS + r")(?![\d])")
_DENOMINATOR = re.compile(r"\s*+/\s*+(" + _DIGITS + r")")
_BARE = re.compile(r"\s*+\**+\s*+" + _NUMBER + r"\s*+\**+\s*+\.?\s*+")
_LEAD = re.compile(r"\s*+\**+\s*+" + _NUMBER)
_THINK_END = "</think>"
_SCORE_KEYS = ("score", "rating")
_LABEL_KEYS = ("label", "verdict", "answer", "choice")
# The line a verdict code marks: at most this many characters after the code are read.
_MARKED_LINE = 200
VERDICT_MARK = "VERDICT-"
_MARKS = re.compile(re.escape(VERDICT_MARK), re.IGNORECASE)  # one pattern for every request's code

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
    """The untrusted texts the judge was shown (the response): verdict text that also occurs in
    them may be the judge quoting the response, wherever it stands, so it is never read."""

    def __init__(self, texts: Sequence[str] = ()) -> None:
        self._texts = [_squash(t).casefold() for t in texts if t]

    def holds(self, text: str, start: int, end: int) -> bool:
        if not self._texts:
            return False
        said = _squash(text[start:end]).casefold()
        return bool(said) and any(said in quoted for quoted in self._texts)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what `\w` matches


def _squash(text: str) -> str:
    return " ".join(text.split())


def marked(text: str, nonce: str) -> tuple[str, int]:
    """The judge's line after its last `VERDICT-<nonce>` mark, and where that line starts.

    ParseError when the judge wrote no such mark: then nothing in the reply is known to be its
    own verdict (a response cannot write the mark: the code did not exist when it was written).
    """
    code = nonce.casefold()
    start = -1
    for mark in _MARKS.finditer(text):
        after = mark.end() + len(nonce)
        if text[mark.end() : after].casefold() == code and not (after < len(text) and _is_word(text[after])):
            start = after  # the last one is wanted
    if start < 0:
        raise ParseError(f"no line marked {VERDICT_MARK}{nonce} in the judge's reply: {_excerpt(text)}")
    while start < len(text) and (text[start].isspace() or text[start] in ":=*-"):
        start += 1
    end = text.find("\n", start, start + _MARKED_LINE)
    return text[start : end if end >= 0 else start + _MARKED_LINE], start


def parse_score(
    text: str,
    low: float,
    high: float,
    fmt: VerdictFormat = "any",
    quotes: Quotes | None = None,
    nonce: str = "",
) -> Found:
    """The judge's score on the [low, high] scale, in the form `fmt`; its final statement wins.

    With a `nonce`, only the judge's line marked with it counts (in any form). Without one,
    matches whose text the response also holds, and out-of-range numbers, are passed over (a
    response must not be able to win the parse, nor to make it fail and force the fallback).
    """
    if nonce:
        line, at = marked(text, nonce)
        found = _score(line, low, high, "any", Quotes(), first=True)
        return Found(found.value, found.text, found.start + at if found.start >= 0 else -1)
    return _score(text, low, high, fmt, quotes or Quotes())


def _score(
    text: str, low: float, high: float, fmt: VerdictFormat, quotes: Quotes, first: bool = False
) -> Found:
    """`first`: the judge's marked line, whose verdict comes first (a quotation may follow it)."""
    final = 0 if first else _after_thinking(text)  # a marked line comes after any reasoning
    if fmt == "json":
        found = _json_verdict(text, final, _SCORE_KEYS, lambda v: _score_value(v, low, high))
        if found is not None:
            return found
    lead = _LEAD.match(text) if first else None  # a marked line that starts with its number
    if lead is not None:
        return _in_range(lead, 1, low, high)
    kinds = [k for k in _SCORE_PATTERNS if fmt in ("any", k)]
    matches = [(m, 1) for kind in kinds for m in _SCORE_PATTERNS[kind].finditer(text, final)]
    if fmt == "any":
        matches += [(m, 1) for m in _OUT_OF.finditer(text, final) if float(m.group(2)) == high]
    problem = ""
    for match, group in sorted(matches, key=lambda item: item[0].start(), reverse=not first):
        if quotes.holds(text, match.start(), match.end()):
            continue
        try:
            return _in_range(match, group, low, high)
        except ParseError as exc:
            problem = problem or str(exc)
    bare = _BARE.match(text, final) if first else _BARE.fullmatch(text, final)
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
    body = text[final:].strip()
    if len(body) >= 6 and body.startswith("```") and body.endswith("```"):  # a fenced block
        body = body[3:-3]
        if body[:4].lower() == "json":
            body = body[4:]
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
    text: str,
    labels: Sequence[str],
    fmt: VerdictFormat = "any",
    quotes: Quotes | None = None,
    nonce: str = "",
) -> Found:
    """Which of `labels` the judge chose (value is its index), in the form `fmt`; its final mark wins.

    With a `nonce`, only the judge's line marked with it counts (in any form, a bare label too).
    """
    if nonce:
        line, at = marked(text, nonce)
        found = _label(line, labels, "any", Quotes(), first=True)
        return Found(found.value, found.text, found.start + at)
    return _label(text, labels, fmt, quotes or Quotes())


def _label(
    text: str, labels: Sequence[str], fmt: VerdictFormat, quotes: Quotes, first: bool = False
) -> Found:
    """`first`: the judge's marked line, whose verdict comes first (a quotation may follow it)."""
    final = 0 if first else _after_thinking(text)  # a marked line comes after any reasoning
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
            r'"(?:label|verdict|answer|choice)"\s*+:\s*+"(' + alternatives + r')"', re.IGNORECASE
        ),
        "brackets": re.compile(r"\[\[\s*+(" + alternatives + r")\s*+\]\]"),
        "result": re.compile(r"\[RESULT\]\s*+:?\s*+(" + alternatives + r")\b"),
        "keyword": re.compile(
            r"\b(?:label|verdict|answer|decision|choice)\s*+[:=]\s*+\**+\s*+\[?(" + alternatives + r")\b",
            re.IGNORECASE,
        ),
    }
    matches = [
        m for kind, pattern in patterns.items() if fmt in ("any", kind) for m in pattern.finditer(text, final)
    ]
    for match in sorted(matches, key=lambda m: m.start(), reverse=not first):
        if not quotes.holds(text, match.start(), match.end()):
            return _label_found(match, labels)
    # The whole reply is a label; on a marked line, a label word that starts it ("INCORRECT, as ...").
    # Never a label word anywhere in prose that may quote the response ("... this answer is CORRECT").
    whole = re.compile(r"\s*+\**+\s*+\[?\[?(" + alternatives + r")\b\]?\]?\s*+\**+\s*+\.?\s*+", re.IGNORECASE)
    said = whole.match(text, final) if first else whole.fullmatch(text, final)
    if said is not None:
        return _label_found(said, labels)
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
