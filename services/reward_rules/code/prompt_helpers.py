"""Helpers a label's tests call, taken from the sample's prompt when the label carries none.

HumanEval's tests for /32, /38 and /50 call functions the prompt defines (`poly`,
`encode_cyclic`, `encode_shift`). The prompt is the dataset's text, not the candidate's, so its
definitions are trusted: when a label names no `helpers` and its tests use names it does not
define, those names' top-level definitions (and what they use in turn: `import math` for
`poly`) are taken from the prompt's code. Never the entry point (the program's function), never
anything from the response.

Where the code is in the prompt: the whole prompt if it parses as Python (a raw HumanEval
prompt); else, per turn of a chat-templated prompt (OpenRLHF sends the templated text), with
the template's markers (`<|im_start|>`, `[INST]`, `<start_of_turn>`, ...) and role names taken
out: the turn if it parses, its fenced code blocks, or its largest parseable trailing region.
Turns spoken by the assistant are skipped: in a multi-turn prompt they may be a model's text.
Parsed with `ast`, never run here.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

MAX_PROMPT_CHARS = 256 << 10
_MAX_TAIL_PARSES = 64  # trailing-region candidates tried per turn (each a full parse)

# Chat-template markers: ChatML/Qwen (<|im_start|>), Llama 3 (<|start_header_id|>), DeepSeek
# (<｜User｜>), Llama 2/Mistral ([INST], <s>), Gemma (<start_of_turn>), Phi (<|user|>).
_MARKER = re.compile(
    r"<\|[^|<>\n]{0,40}\|>|<｜[^｜<>\n]{0,40}｜>|\[/?INST\]|<<\/?SYS>>|</?s>|<start_of_turn>|<end_of_turn>"
    r"|<bos>|<eos>"
)
_ROLE = re.compile(r"\A[ \t]*(system|user|assistant|model|human|gpt|tool|ipython)[ \t]*(\n|:|\Z)", re.I)
_ASSISTANT_MARKER = re.compile(r"<\|(assistant|model)\|>|<｜Assistant｜>", re.I)
_FENCE = re.compile(r"^[ \t]*```[ \t]*(python3?|py)?[ \t]*\n(.*?)^[ \t]*```", re.M | re.S | re.I)
_CODE_START = re.compile(r"^(def |async def |class |import |from |@|[A-Za-z_][A-Za-z_0-9]*\s*(:[^=]*)?=[^=])")


@dataclass(frozen=True)
class _Definition:
    names: frozenset[str]  # what the statement binds
    uses: frozenset[str]  # names it reads
    source: str


def _parses(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _turns(prompt: str) -> list[str]:
    """The prompt's turns, the template's markers and role names gone; assistant turns left out."""
    pieces: list[str] = []
    position = 0
    assistant = False
    for match in _MARKER.finditer(prompt):
        if not assistant:
            pieces.append(prompt[position : match.start()])
        assistant = bool(_ASSISTANT_MARKER.fullmatch(match.group()))
        position = match.end()
        rest = prompt[position:]
        role = _ROLE.match(rest)
        if role is not None:
            assistant = role.group(1).lower() in ("assistant", "model", "gpt")
            position += role.end()
    if not assistant:
        pieces.append(prompt[position:])
    return [piece for piece in pieces if piece.strip()]


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _trailing_region(text: str) -> tuple[ast.Module, str] | None:
    """The longest parseable region that runs to the turn's end and starts where code can start."""
    lines = _lines(text)
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:_MAX_TAIL_PARSES]
    for start in starts:
        region = "".join(lines[start:])
        tree = _parses(region)
        if tree is not None:
            return tree, region
    return None


def _modules(prompt: str) -> list[tuple[ast.Module, str]]:
    """The prompt's code, each parsed with its text."""
    whole = _parses(prompt)
    if whole is not None:
        return [(whole, prompt)]
    found: list[tuple[ast.Module, str]] = []
    for turn in _turns(prompt):
        tree = _parses(turn)
        if tree is not None:
            found.append((tree, turn))
            continue
        fenced = [(_parses(m.group(2)), m.group(2)) for m in _FENCE.finditer(turn)]
        blocks = [(t, code) for t, code in fenced if t is not None]
        if blocks:
            found.extend(blocks)
            continue
        tail = _trailing_region(turn)
        if tail is not None:
            found.append(tail)
    return found


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"}
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    names: set[str] = set()
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
    return names


def _used(node: ast.stmt) -> set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def _definitions(prompt: str) -> list[_Definition]:
    definitions: list[_Definition] = []
    for tree, text in _modules(prompt):
        lines = _lines(text)
        for node in tree.body:
            names = _bound(node)
            if not names:
                continue
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            source = "".join(lines[first - 1 : node.end_lineno or node.lineno])
            definitions.append(_Definition(frozenset(names), frozenset(_used(node)), source))
    return definitions


@functools.lru_cache(maxsize=512)
def helpers_from_prompt(prompt: str, needed: frozenset[str], exclude: frozenset[str]) -> str:
    """The prompt's definitions of `needed` names and of what they use, in the prompt's order.

    `exclude` (the functions under test) is never taken. "" when the prompt defines none of them.
    """
    if not needed or not prompt or len(prompt) > MAX_PROMPT_CHARS:
        return ""
    definitions = [d for d in _definitions(prompt) if not d.names & exclude]
    chosen: set[int] = set()
    wanted = set(needed) - exclude
    while wanted:
        name = wanted.pop()
        # the last definition of a name is the one Python would keep
        for index in range(len(definitions) - 1, -1, -1):
            if name in definitions[index].names:
                if index not in chosen:
                    chosen.add(index)
                    wanted |= set(definitions[index].uses) - exclude
                break
    return "".join(
        definitions[i].source if definitions[i].source.endswith("\n") else definitions[i].source + "\n"
        for i in sorted(chosen)
    )
