"""What a judge is shown of an answer: fenced by a tag it cannot forge, and cut to a size.

A response is the policy's text: it can try to close the rubric's answer section and write
"grader notes" after it. Each answer a model rubric shows goes between two lines carrying a
tag derived from the answer itself (the first 16 hex digits of its SHA-256): to write the
closing fence inside itself, a response would have to contain its own hash. Being a function
of the text, the tag keeps identical requests identical, so the judge cache still works.

A response longer than `max_chars` characters or `max_bytes` UTF-8 bytes is overlong: by
default (`overlong: lowest`) it gets the rubric's lowest reward and no judge sees it, since a
cut response would hide whatever its middle holds. With `overlong: cut_middle` it loses its
middle (its start and end stay, with a line that says how much was cut). A pairwise baseline
(the dataset's text) is always cut that way. The rubric's instructions and the reference are
never cut. Only what the judge sees is fenced and cut: string_check rubrics compare the
response as it is. A rubric with `final_answer_only` (the verifiers) is shown only what the
response finally says, after its last `</think>`, before any of this.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Context values that are answers: the response (both names) and a pairwise baseline.
_SAMPLE_ANSWERS = ("output_text", "response")
_ITEM_ANSWERS = ("baseline",)


@dataclass(frozen=True, slots=True)
class Shown:
    context: dict[str, Any]
    cut_chars: int  # characters of the response the judge does not see


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def final_part(text: str) -> str:
    """What a response finally says: after its last `</think>`; "" when it opened `<think>` and never
    closed it (cut off while thinking, no answer); the whole text when it has no thinking block."""
    end = text.rfind(THINK_CLOSE)
    if end >= 0:
        return text[end + len(THINK_CLOSE) :].strip()
    return "" if THINK_OPEN in text else text


def final_only(context: Mapping[str, Any]) -> dict[str, Any]:
    """`context` whose response is its final part (`final_part`), under both of its names."""
    sample = dict(context.get("sample") or {})
    response = sample.get("output_text")
    if isinstance(response, str):
        sample.update(dict.fromkeys(_SAMPLE_ANSWERS, final_part(response)))
    return {**context, "sample": sample}


def tag_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def overlong(text: str, max_chars: int, max_bytes: int) -> bool:
    return len(text) > max_chars or (len(text) * 4 > max_bytes and utf8_size(text) > max_bytes)


def cut_middle(text: str, max_chars: int, max_bytes: int | None = None) -> tuple[str, int]:
    """`text` with its middle replaced by a note when longer than `max_chars` characters (or
    `max_bytes` UTF-8 bytes); and how many characters went."""
    limit = max_chars
    if max_bytes is not None:
        size = utf8_size(text)
        if size > max_bytes:  # fewer characters, in proportion (multi-byte scripts)
            limit = min(limit, max(1, len(text) * max_bytes // size - 64))
    if len(text) <= limit:
        return text, 0
    while True:
        cut = len(text) - limit
        head = limit // 2
        note = f"\n[... {cut} characters of this answer cut here ...]\n"
        shown = text[:head] + note + text[len(text) - (limit - head) :]
        if max_bytes is None or limit <= 1 or utf8_size(shown) <= max_bytes:
            return shown, cut
        limit = limit * 9 // 10


def fence(text: str) -> str:
    tag = tag_of(text)
    return f"<<<answer-{tag}>>>\n{text}\n<<<end-answer-{tag}>>>"


def shown(context: Mapping[str, Any], max_chars: int, max_bytes: int | None = None) -> Shown:
    """The template context a model rubric renders: every answer cut to size and fenced."""
    sample = dict(context.get("sample") or {})
    item = dict(context.get("item") or {})
    cut_chars = 0
    response = sample.get("output_text")
    if isinstance(response, str):
        text, cut_chars = cut_middle(response, max_chars, max_bytes)
        fenced = fence(text)
        sample.update(dict.fromkeys(_SAMPLE_ANSWERS, fenced))
    for key in _ITEM_ANSWERS:
        value = item.get(key)
        if isinstance(value, str):
            item[key] = fence(cut_middle(value, max_chars, max_bytes)[0])
    return Shown({**context, "sample": sample, "item": item}, cut_chars)
