"""The log keys of the text statistics: what every sample's extra_logs carry, by name.

The services compute the values (services/textstats/emergence.py); a trainer adapter that answers
without reaching the gateway must still return the same keys (trainer frameworks merge logs by
key), so the names live here, in the contract, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DEFAULT_REFLECTION_KEYWORDS = (
    "wait",
    "actually",
    "hmm",
    "however",
    "alternatively",
    "let me reconsider",
    "let me re-check",
    "let me recheck",
    "let me verify",
    "let me check",
    "double-check",
    "on second thought",
    "i made a mistake",
    "re-evaluate",
    "verify",
)

# The statistics after the per-keyword counts, in the order the services report them.
STAT_KEYS = (
    "reflect/total",
    "reflect/any",
    "response/chars",
    "response/words",
    "response/stopped",
    "format/think",
    "format/answer_tag",
    "format/boxed",
    "response/repetition",
)


def slug(keyword: str) -> str:
    """A log-key-safe name for a keyword: 'let me reconsider' -> 'let_me_reconsider'."""
    return re.sub(r"[^0-9a-z]+", "_", keyword.lower()).strip("_")


def keyword_set(keywords: Iterable[str]) -> set[str]:
    """The keywords as they are matched: stripped, lower-cased, no empty ones."""
    return {k.strip().lower() for k in keywords if k.strip()}


def text_stat_keys(keywords: Iterable[str]) -> tuple[str, ...]:
    """Every text-statistics key for these reflection keywords, in the services' order."""
    return (*(f"reflect/{slug(k)}" for k in sorted(keyword_set(keywords))), *STAT_KEYS)


# The keys under the default settings: what the trainer adapters answer with.
DEFAULT_TEXT_STAT_KEYS = text_stat_keys(DEFAULT_REFLECTION_KEYWORDS)
