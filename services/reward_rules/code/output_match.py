"""Output and value comparison, done in the trusted process on plain data only.

stdio: CRLF accepted, trailing whitespace per line and trailing blank lines ignored, then
tokens compared case-sensitively and exactly as text: `00000101` is not `101`, `+7` is not
`7`, `-0` is not `0`. A label that sets `tolerance` (as judges' float checkers do) lets a
non-integer number token match within that absolute or relative error; integer tokens and
non-finite numbers stay exact. Built-in checkers (`tests.checker`): tokens (that), float
(tokens with 1e-6 unless set), lines_unordered (any order), yes_no (case-insensitive).
Values (call tests): builtin values from the sandbox's codec
against the label's JSON; tuples match lists (JSON has no tuples), numbers compare exactly
(5.0 equals 5, a Fraction its value) unless the label sets a tolerance, and a bool never
equals a number. Nothing here raises on what a candidate produced (a 5000-digit number, 10**400
against a float): the candidate's output always gets a verdict.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from fractions import Fraction
from typing import Any

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_PREVIEW = 60
_NUMBER = (int, float, Fraction)


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _tokens_match(expected: str, actual: str, tolerance: float) -> bool:
    if expected == actual:
        return True
    if not tolerance or _INT.fullmatch(expected) or len(expected) > 400 or len(actual) > 400:
        return False
    if not (_FLOAT.fullmatch(expected) and _FLOAT.fullmatch(actual)):
        return False
    want, got = float(expected), float(actual)
    if not (math.isfinite(want) and math.isfinite(got)):
        return False  # 1e999 and 1e400 are different numbers that both overflow
    return math.isclose(want, got, rel_tol=tolerance, abs_tol=tolerance)


def _preview(text: str) -> str:
    return repr(text if len(text) <= _PREVIEW else text[:_PREVIEW] + "...")


def _canonical(line: str) -> str:
    return " ".join(line.split())


def _unordered_mismatch(want: list[str], got: list[str]) -> str | None:
    missing = Counter(map(_canonical, want)) - Counter(map(_canonical, got))
    extra = Counter(map(_canonical, got)) - Counter(map(_canonical, want))
    if not missing and not extra:
        return None
    if missing:
        return f"line {_preview(next(iter(missing)))} missing (lines in any order)"
    return f"unexpected line {_preview(next(iter(extra)))} (lines in any order)"


def check_output(expected: str, actual: str, checker: str = "tokens", tolerance: float = 0.0) -> str | None:
    """A built-in checker's verdict: None when right, else the first difference in words."""
    if checker == "lines_unordered":
        return _unordered_mismatch(_lines(expected), _lines(actual))
    if checker == "yes_no":
        return stdio_mismatch(expected.casefold(), actual.casefold(), tolerance)
    if checker == "float":
        return stdio_mismatch(expected, actual, tolerance or 1e-6)
    return stdio_mismatch(expected, actual, tolerance)


def stdio_mismatch(expected: str, actual: str, tolerance: float = 0.0) -> str | None:
    """None when the output is right, else a short reason naming the first difference."""
    want, got = _lines(expected), _lines(actual)
    for number, (want_line, got_line) in enumerate(zip(want, got, strict=False), start=1):
        want_tokens, got_tokens = want_line.split(), got_line.split()
        if len(want_tokens) != len(got_tokens) or not all(
            _tokens_match(w, g, tolerance) for w, g in zip(want_tokens, got_tokens, strict=True)
        ):
            return f"line {number}: expected {_preview(want_line)}, got {_preview(got_line)}"
    if len(got) != len(want):
        return f"expected {len(want)} lines, got {len(got)}"
    return None


def _numbers_match(actual: Any, expected: Any, tolerance: float) -> bool:
    """Exact numeric equality (never raises on huge ints), or within `tolerance` when one is set."""
    if type(actual) is float and type(expected) is float and math.isnan(actual) and math.isnan(expected):
        return True
    if actual == expected:
        return True
    if not tolerance or type(expected) is int:
        return False
    try:
        return math.isclose(float(actual), float(expected), rel_tol=tolerance, abs_tol=tolerance)
    except (OverflowError, ValueError):
        return False  # 10**400 against a float: not close to anything finite


def values_match(actual: Any, expected: Any, tolerance: float = 0.0) -> bool:
    """Structural equality of builtin values (numbers exact unless `tolerance`); no object's
    __eq__ is trusted: only builtin types and Fraction ever reach here."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is bool and type(expected) is bool and actual == expected
    if type(expected) in _NUMBER and type(actual) in _NUMBER:
        return _numbers_match(actual, expected, tolerance)
    if type(expected) in (list, tuple) and type(actual) in (list, tuple):
        return len(actual) == len(expected) and all(
            values_match(a, e, tolerance) for a, e in zip(actual, expected, strict=True)
        )
    if type(expected) is dict and type(actual) is dict:
        return actual.keys() == expected.keys() and all(
            values_match(actual[k], expected[k], tolerance) for k in expected
        )
    if type(expected) in (str, type(None), bytes, complex, set, frozenset):
        return type(actual) is type(expected) and bool(actual == expected)
    return False


def describe_value(value: Any) -> str:
    """A short preview; a number too long to print (Python caps int-to-text at 4300 digits) is described."""
    try:
        text = repr(value)
    except ValueError:
        return f"<a {type(value).__name__} too long to print>"
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."
