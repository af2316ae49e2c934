"""Output and value comparison, done in the trusted process on plain data only.

stdio: CRLF accepted, trailing whitespace per line and trailing blank lines ignored, then
tokens compared case-sensitively: integers exactly, other numbers within a relative or
absolute tolerance (so "0.5000001" matches "0.5"), everything else as text.
Values (call tests): builtin values from the sandbox's codec against the label's JSON;
tuples match lists (JSON has no tuples), floats match within the same tolerance, and a
bool never equals a number.
"""

from __future__ import annotations

import math
import re
from typing import Any

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_PREVIEW = 60


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _tokens_match(expected: str, actual: str, tolerance: float) -> bool:
    if expected == actual:
        return True
    if _INT.fullmatch(expected) and _INT.fullmatch(actual):
        return int(expected) == int(actual)
    if _FLOAT.fullmatch(expected) and _FLOAT.fullmatch(actual) and not _INT.fullmatch(expected):
        return math.isclose(float(expected), float(actual), rel_tol=tolerance, abs_tol=tolerance)
    return False


def _preview(text: str) -> str:
    return repr(text if len(text) <= _PREVIEW else text[:_PREVIEW] + "...")


def stdio_mismatch(expected: str, actual: str, tolerance: float = 1e-6) -> str | None:
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


def values_match(actual: Any, expected: Any, tolerance: float = 1e-6) -> bool:
    """Structural equality of builtin values with float tolerance; no object's __eq__ is trusted."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is bool and type(expected) is bool and actual == expected
    if type(expected) in (int, float) and type(actual) in (int, float):
        if type(expected) is int and type(actual) is int:
            return bool(actual == expected)
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        return math.isclose(actual, expected, rel_tol=tolerance, abs_tol=tolerance)
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
    text = repr(value)
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."
