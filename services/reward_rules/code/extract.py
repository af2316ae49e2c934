"""The program in a response: the last fenced code block after any thinking, else the whole answer."""

from __future__ import annotations

import re

from services.common.emergence import strip_eos
from services.common.settings import DEFAULT_EOS_MARKERS

_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
# An opening fence (``` or longer, optional info string) up to the matching closing fence.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n`]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


def answer_part(response: str) -> str:
    """What follows the thinking; nothing when the thinking never closed (a truncated rollout)."""
    text, _ = strip_eos(response, DEFAULT_EOS_MARKERS)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end() :]
    return "" if _THINK_OPEN.search(text) else text


def extract_program(response: str) -> str:
    """The last fenced block's body (an unclosed last fence runs to the end), or the whole answer."""
    text = answer_part(response)
    blocks = [match.group(2) for match in _FENCE.finditer(text)]
    program = blocks[-1] if blocks else text
    return program.strip("\n") + "\n" if program.strip() else ""
