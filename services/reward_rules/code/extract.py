"""The program in a response: the last fenced code block after any thinking, else the whole answer."""

from __future__ import annotations

import re

from arbiter.openrlhf import DEFAULT_EOS_MARKERS, strip_eos
from services.reward_rules.code.languages import FENCES

_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
# An opening fence (``` or longer, optional info string) up to the matching closing fence.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n`]*)\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
# Info strings that mark a block as the label's language (```cpp): preferred over other blocks.
_INFO = FENCES


def answer_part(response: str) -> str:
    """What follows the thinking; nothing when the thinking never closed (a truncated rollout)."""
    text, _ = strip_eos(response, DEFAULT_EOS_MARKERS)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end() :]
    return "" if _THINK_OPEN.search(text) else text


def extract_program(response: str, language: str = "python") -> str:
    """The last fenced block's body (an unclosed last fence runs to the end), or the whole answer.

    For another language than Python the last block marked as it (```cpp, ```go: languages.py)
    wins over a later unmarked or other block."""
    text = answer_part(response)
    blocks = [(match.group(2).strip().lower(), match.group(3)) for match in _FENCE.finditer(text)]
    marked = [body for info, body in blocks if info in _INFO.get(language, ())]
    if language != "python" and marked:
        blocks = [("", marked[-1])]
    program = blocks[-1][1] if blocks else text
    return program.strip("\n") + "\n" if program.strip() else ""
