"""Regexes that come from configuration (the gateway's routes), checked at load and bounded at run.

A backtracking pattern such as `(x+x+)+y` stalled the gateway's event loop for 3 s on a
26-character prompt, and every sample is matched against the routes. Two guards:
- at load, a pattern with a quantifier inside a quantifier (the shape of nearly every
  catastrophic pattern) is refused, with a message that says so;
- at run time, matching uses the `regex` library with a time bound: a match that runs out
  of time counts as no match (and is logged), never as a stall.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterable
from typing import Any

import regex

log = logging.getLogger(__name__)

# The stdlib's own parser (no public API; its output shape is stable across 3.11-3.13).
_parser: Any = importlib.import_module("re._parser")
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}

MATCH_TIMEOUT_S = 0.05


class UnsafePatternError(ValueError):
    """The pattern is not a valid regex, or may backtrack catastrophically."""


def _quantifier_depth(items: Iterable[tuple[Any, Any]]) -> int:
    """How deeply quantifiers (anything that may repeat more than once) nest in parsed items."""
    depth = 0
    for op, arg in items:
        name = str(op)
        if name in _REPEATS:
            _, high, body = arg
            depth = max(depth, (1 if high > 1 else 0) + _quantifier_depth(body))
        elif name == "SUBPATTERN":
            depth = max(depth, _quantifier_depth(arg[-1]))
        elif name == "BRANCH":
            depth = max(depth, *(_quantifier_depth(branch) for branch in arg[1]))
        elif name in {"ASSERT", "ASSERT_NOT"}:
            depth = max(depth, _quantifier_depth(arg[1]))
        elif name == "ATOMIC_GROUP":
            depth = max(depth, _quantifier_depth(arg))
        elif name == "GROUPREF_EXISTS":
            depth = max(depth, *(_quantifier_depth(part) for part in arg[1:] if part is not None))
    return depth


def check_pattern(pattern: str) -> str:
    """`pattern` if it compiles and has no nested quantifier; raises UnsafePatternError otherwise."""
    try:
        parsed = _parser.parse(pattern)
    except re.error as exc:
        raise UnsafePatternError(f"bad regex {pattern!r}: {exc}") from exc
    if _quantifier_depth(parsed.data) > 1:
        raise UnsafePatternError(
            f"regex {pattern!r} repeats a part that itself repeats (like (a+)+), which can take "
            "exponential time on some inputs; write it without nested quantifiers"
        )
    return pattern


class BoundedPattern:
    """A checked pattern whose matches run at most `timeout_s` each (no match when out of time)."""

    def __init__(self, pattern: str, ignore_case: bool = False, timeout_s: float = MATCH_TIMEOUT_S) -> None:
        self.pattern = check_pattern(pattern)
        self._compiled = regex.compile(pattern, regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0))
        self._timeout = timeout_s

    def search(self, text: str) -> bool:
        return self._bounded(lambda: self._compiled.search(text, timeout=self._timeout))

    def fullmatch(self, text: str) -> bool:
        return self._bounded(lambda: self._compiled.fullmatch(text, timeout=self._timeout))

    def _bounded(self, match: Any) -> bool:
        try:
            return match() is not None
        except TimeoutError:
            log.warning("regex %r ran out of time (%gs): counted as no match", self.pattern, self._timeout)
            return False
