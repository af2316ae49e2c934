"""Reading a policy's action: the tool calls it makes and the code they carry (pure functions).

A tool call is a fenced block (```python ... ```, also `py`/`python3`) or a tag pair
(<code>...</code>, the tag configurable). A block left open at the very end of the action counts:
generation often stops on the closing fence or an `output` marker. Every pattern is matched
lazily to its closing text, so a scan stays linear in the action's length.
"""

from __future__ import annotations

import re
from functools import cache

_FENCED = re.compile(r"```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


@cache
def _tagged(tag: str) -> re.Pattern[str]:
    name = re.escape(tag)
    return re.compile(rf"<{name}>(.*?)(?:</{name}>|\Z)", re.DOTALL)


def tool_calls(action: str, syntax: str = "both", tag: str = "code") -> list[str]:
    """The code of every tool call in `action`, in the order written (empty: none, a final answer)."""
    found: list[tuple[int, str]] = []
    if syntax in ("fenced", "both"):
        found += [(m.start(), m.group(1)) for m in _FENCED.finditer(action)]
    if syntax in ("tag", "both"):
        found += [(m.start(), m.group(1)) for m in _tagged(tag).finditer(action)]
    found.sort()
    kept: list[str] = []
    end = -1
    for start, code in found:  # a tag inside a fence (or the reverse) is one call, the outer one
        if start < end:
            continue
        kept.append(code.strip("\n"))
        end = start + len(code)
    return [code for code in kept if code.strip()]


def render(template: str, output: str) -> str:
    """`template` with {output} replaced; text in the output that would close the template's wrapper
    early (`</output>`) is escaped, so a program cannot forge where its feedback ends."""
    head, marker, tail = template.partition("{output}")
    if not marker:
        return template + output
    closing = tail.strip()
    if closing:
        output = output.replace(closing, closing.replace("<", "&lt;").replace("`", "\\`"))
    return head + output + tail
