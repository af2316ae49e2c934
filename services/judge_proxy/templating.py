"""`{{item.*}}` / `{{sample.*}}` substitution for rubric messages, and nothing more.

Deliberately not a template engine: one regex pass, dotted lookups, no expressions, no
code. Substitution is a single pass, so a response that contains `{{item.reference}}`
cannot make the judge see the reference (no injection through values).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

NAMESPACES = ("item", "sample")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)+)\s*\}\}")
_ANY_BRACES = re.compile(r"\{\{.*?\}\}", re.DOTALL)


class TemplateError(ValueError):
    """A template uses an unknown namespace, or a value it needs is missing."""


def validate(template: str) -> str:
    """Check a template at load time: every `{{...}}` is a dotted item./sample. path."""
    for match in _ANY_BRACES.finditer(template):
        inner = _PLACEHOLDER.fullmatch(match.group(0))
        if inner is None:
            raise TemplateError(f"{match.group(0)!r} is not a placeholder like {{{{item.reference}}}}")
        namespace = inner.group(1).split(".", 1)[0]
        if namespace not in NAMESPACES:
            raise TemplateError(f"{match.group(0)!r}: namespace must be one of {', '.join(NAMESPACES)}")
    return template


def lookup(context: Mapping[str, Any], path: str) -> Any:
    value: Any = context
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise TemplateError(f"{{{{{path}}}}} is not set for this sample")
        value = value[part]
    if value is None:
        raise TemplateError(f"{{{{{path}}}}} is null for this sample")
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render(template: str, context: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda match: _text(lookup(context, match.group(1))), template)
