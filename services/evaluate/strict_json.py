"""Strict JSON out, whatever came in: NaN and Infinity become the strings "NaN", "Infinity", "-Infinity".

Python's json reads `NaN` / `Infinity` in input rows (and Parquet floats hold them), and would
write them back as bare tokens that strict parsers (JavaScript, jq, Go, pandas' default engine)
reject. Everything arbiter writes goes through `dumps`: the fast path is the plain encoder;
only a record holding a non-finite float is copied with those values spelled as strings, which
keeps the information (a `null` would lose the sign of an infinity).
"""

from __future__ import annotations

import json
import math
from typing import Any


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def dumps_plain(value: Any) -> tuple[str, bool]:
    """`dumps(value)`, and whether it is plain: reading it back gives `value`'s own strings and
    numbers (False when a non-finite float or a value JSON lacks had to be spelled as a string)."""
    spelled = False

    def as_text(item: Any) -> str:
        nonlocal spelled
        spelled = True
        return str(item)

    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=as_text)
    except ValueError:
        return dumps(value), False
    return text, not spelled


def dumps(value: Any, indent: int | None = None) -> str:
    """`json.dumps` that never writes NaN or Infinity (non-JSON values fall back to `str`)."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False, default=str)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, indent=indent, allow_nan=False, default=str)
