"""Finding the final answer in a response or a reference.

Pure, linear-time string work (no backtracking-prone patterns over the whole text; boxes
are matched in one pass, so a wall of unclosed `\\boxed{` costs no more than its
length). The order follows what graders in the wild agree on: an explicit `<answer>`
block, then the last `\\boxed{}`, then an announced answer ("the answer is", "Answer:",
and the same in other languages), `####`, a bold closing value, then the value the
closing sentences state (sentences.py). Multiple choice lives in choice.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.reward_rules.math.sentences import (
    MATH_SPAN,
    PROSE_WORD,
    WORD_RUN,
    last_match,
    last_value,
    number_word,
    sentence_value,
    span_run,
    stated_word,
)

__all__ = [
    "TAIL",
    "Extraction",
    "all_boxed",
    "anchored",
    "extract_answer",
    "extract_boxed",
    "extract_reference",
    "last_anchor",
    "visible_text",
]

# Where the tail searches look: the final answer lives at the end of a response.
TAIL = 4000

_THINK_OPEN = re.compile(r"<think(?:ing)?\s*>", re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?\s*>", re.I)
_SPECIAL_TOKENS = re.compile(r"<\|[^|<>]{1,40}\|>|</s>|<｜[^｜<>]{1,40}｜>|<eos>|<end_of_turn>")
_ANSWER_TAG = re.compile(r"<answer>", re.I)
_ANSWER_TAG_CLOSE = re.compile(r"</answer>", re.I)
# "The answer is", "Answer:", and the same announcement in the languages models answer in.
_ANCHOR = re.compile(
    r"(?:(?:final\s+answer|the\s+answer|answer|final\s+result|final)\s*(?:\([^()\n]{0,30}\)\s*)?"
    r"(?:\*\*)?\s*(?:is|:|=|would\s+be|will\s+be|should\s+be|must\s+be)\s*[:=]?"
    r"|(?:final\s+answers|the\s+answers)\s*(?:\*\*)?\s*(?:are|:)\s*:?"
    r"|(?<![a-z])(?:r[ée]ponse|respuesta|resposta|risposta)(?:\s+(?:finale?|correcte|correcta|correta|corretta))?"
    r"\s*(?:\*\*)?\s*(?:est|es|é|è|:|=)\s*[:=]?"
    r"|(?<![a-z])(?:endg[üu]ltige\s+)?antwort\s*(?:\*\*)?\s*(?:ist|lautet|:|=)\s*[:=]?"
    r"|(?<![а-я])ответ\s*(?:\*\*)?\s*[:=]"
    r"|(?:答案|答え|解答|结果|結果)\s*(?:\*\*)?\s*(?:应该是|应为|是|为|為|は|:|：|=)"
    r"|(?:^|\n)\s*答\s*[:：]"
    r"|(?:정답|답)\s*(?:은|는|:))\s*(?:\*\*)?",
    re.I,
)
_GSM8K = re.compile(r"####\s*([^\n]+)")
_SENTENCE_END = re.compile(
    r"\.(?=\s|$)|\n|;|[。，；！？]|(?<!\\)[!?](?=\s|$)|\s(?:because|since|so|which|as|where|when|therefore|thus|hence"
    r"|car|parce|porque|pues|weil|denn)\s|,\s(?=[^\W\d_]{3})"
    r"|\s\((?=since|because|as\s|which|from|by\s|using|i\.e|e\.g|note|check)"
)
# What may stand between boxes that together form one answer: `\boxed{1}, \boxed{2}`.
_BOX_SEPARATOR = re.compile(
    r"(?:\s|\$|,|;|\band\b|\bor\b|\\quad|\\text\{\s*(?:and|or)\s*\}|[a-zA-Z](?:_\{?\d+\}?)?\s*=)*"
)
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
# PRM800K's closing block: a `# Answer` heading, then the value alone on the last line(s).
_ANSWER_BLOCK = re.compile(
    r"(?:^|\n|(?<=[.!?])[ \t])[ \t]*#{1,4}[ \t]*(?:Final[ \t]+)?Answer[ \t]*:?[ \t]*(?:\n\s*)?"
    r"(\S[^\n]{0,200})\s*$",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Extraction:
    """The answer text found, and where it came from (reported in `detail`)."""

    text: str
    source: str


def visible_text(response: str) -> str:
    """The response without its reasoning block and trailing special tokens.

    Text inside `<think>...</think>` never counts: the answer is what follows the last
    `</think>`. An opened but never closed `<think>` means the model never answered.
    """
    close = last_match(_THINK_CLOSE.finditer(response))
    if close is not None:
        response = response[close.end() :]
    elif _THINK_OPEN.search(response):
        return ""
    return _SPECIAL_TOKENS.sub(" ", response).strip()


_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z]) *")
_BRACE = re.compile(r"[{}]")


def _closing_braces(text: str, opens: set[int]) -> dict[int, int]:
    """Index just past the group for each `{` in `opens`: one left-to-right pass (linear).

    Scanning from each box to the end of the text instead would be quadratic in a wall
    of unclosed `\\boxed{` (a response can hold 100,000 of them).
    """
    closes: dict[int, int] = {}
    stack: list[int] = []
    if not opens:
        return closes
    # Braces before the first box sit below it on the stack: they never change its match.
    for match in _BRACE.finditer(text, min(opens)):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            start = stack.pop()
            if start in opens:
                closes[start] = match.end()
    return closes


def _boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """The last top-level `\\boxed{...}` / `\\fbox{...}` contents (at most 8), right to left."""
    commands = list(_BOX_COMMAND.finditer(text))
    if not commands:
        return []
    closes = _closing_braces(text, {m.end() for m in commands if text.startswith("{", m.end())})
    spans: list[tuple[int, int, str]] = []
    for command in reversed(commands):
        start, j = command.start(), command.end()
        if j < len(text) and text[j] == "{":
            close = closes.get(j)
            if close is None:
                continue
            # A box nested inside a later box is part of that box, not a separate answer.
            if not spans or close <= spans[-1][0]:
                spans.append((start, close, text[j + 1 : close - 1].strip()))
        elif j < len(text):
            word = re.match(r"[^\s$.,;]+", text[j : j + 200])
            if word and (not spans or j + word.end() <= spans[-1][0]):
                spans.append((start, j + word.end(), word.group(0)))
        if len(spans) >= 8:
            break
    return spans


def all_boxed(text: str) -> list[str]:
    """Every top-level boxed answer of the visible text, in reading order (at most 8)."""
    return [content for _, _, content in reversed(_boxed_spans(visible_text(text)))]


def extract_boxed(text: str) -> str | None:
    """The last boxed answer; adjacent boxes (`\\boxed{1}, \\boxed{2}`) join into a list."""
    spans = _boxed_spans(text)
    if not spans:
        return None
    parts = [spans[0][2]]
    for k in range(1, len(spans)):
        between = text[spans[k][1] : spans[k - 1][0]]
        if len(between) > 60 or not _BOX_SEPARATOR.fullmatch(between):
            break
        if spans[k][2] != parts[-1]:
            parts.append(spans[k][2])
    parts.reverse()
    return ", ".join(parts)


_FILLER = re.compile(
    r"^(?:donc|alors|ainsi|thus|therefore|simply|just|clearly|then|finally|entonces|pues|así|also|daher"
    r"|então|quindi|dunque)\b[\s,:]*",
    re.I,
)


# A later correction of an announced answer: "no, it is 42", "actually, it's 7", "wait: 12".
_CORRECTION = re.compile(
    r"(?:^|[\s.,;!?])(?:no|nope|actually|wait|oops|correction|sorry|I\s+mean)"
    r"(?:[,:!]\s*|\s+(?=it|that))(?:it(?:'s|\s+is|\s+should\s+be)\s+|that\s+should\s+be\s+)?"
    r"\$?(-?\d+(?:\.\d+)?(?:/\d+)?)\$?(?=\s*(?:[.!。]|$))",
    re.I,
)


# A second value offered after the answer: "..., or maybe 6", "Alternatively, it could be 6".
_SECOND_GUESS = re.compile(
    r"(?:\bor\s+(?:maybe|perhaps|possibly|probably|else)|\balternatively|\bor\s+it\s+(?:could|might|may)\s+be"
    r"|\bit\s+(?:could|might|may)\s+also\s+be)[\s,:]*(?:it\s+(?:is|could\s+be)\s+)?"
    r"\$?(-?\d+(?:\.\d+)?(?:/\d+)?)\$?",
    re.I,
)


def _after_anchor(segment: str) -> str:
    """The answer announced right after "the answer is": a math span or the clause."""
    segment = _FILLER.sub("", segment.lstrip(" *:}"))  # `\\textbf{Answer:} 5`
    boxed = extract_boxed(segment[:600])
    if boxed is not None and segment.lstrip().startswith(("\\boxed", "\\fbox", "$\\boxed", "\\(\\boxed")):
        return boxed
    head = segment.lstrip()[:600]
    span = MATH_SPAN.match(head, 1 if head[:1] in ("-", "−") else 0)
    if span:
        return span_run(head, list(MATH_SPAN.finditer(head)), 0, forward=True)
    segment = segment[:400]
    end = _SENTENCE_END.search(segment)
    clause = segment[: end.start()] if end else segment
    return clause.strip().strip("*").strip()


# "I conclude that my answer is correct": a judgement of the answer, not the answer.
_JUDGEMENT = re.compile(
    r"[\s*:]*(?:correct|right|wrong|incorrect|valid|invalid|reasonable|consistent|plausible|confirmed"
    r"|verified|as\s+follows|below|above)\b",
    re.I,
)


def last_anchor(text: str) -> re.Match[str] | None:
    """The last answer phrase ("the answer is", "Answer:", ...) that announces an answer.

    One followed by a judgement ("my answer is correct") announces none: the one before
    it counts.
    """
    anchors = list(_ANCHOR.finditer(text))
    for anchor in reversed(anchors[-6:]):
        if _JUDGEMENT.match(text, anchor.end()) is None:
            return anchor
    return None


def anchored(text: str, raw: bool = False) -> str | None:
    """What follows the last answer phrase; `raw` keeps a whole sentence (for letters)."""
    last = last_anchor(text)
    if last is None:
        return None
    correction = last_match(_CORRECTION.finditer(text, last.end(), last.end() + 600))
    if correction is not None and not raw:
        # "the answer is 24, but let me double-check... no, it is 42": the correction stands.
        return correction.group(1)
    answer = _after_anchor(text[last.end() :])
    answer = re.sub(r"^#{2,}\s*", "", answer) if answer else answer  # "the answer is #### 12"
    if not answer:
        return None
    if raw:
        return answer
    value = sentence_value(answer)
    second = _SECOND_GUESS.search(text, last.end(), last.end() + 300)
    if second is not None and second.group(1) != value:
        # "The answer is 5. Hmm, or maybe 6.": both values offered, a list (a hedge).
        return f"{value}, {second.group(1)}"
    return value


def extract_answer(response: str) -> Extraction | None:
    """The final answer of a model response, or None when it has none."""
    text = visible_text(response)
    if not text:
        return None
    source_prefix = ""
    opened = last_match(_ANSWER_TAG.finditer(text))
    if opened is not None:
        close = _ANSWER_TAG_CLOSE.search(text, opened.end())
        inner = text[opened.end() : close.start() if close else len(text)].strip()
        if inner:
            text = inner
            source_prefix = "answer_tag+"
            if len(inner) <= 200 and "\\boxed" not in inner and _ANCHOR.search(inner) is None:
                return Extraction(_unbold(inner), "answer_tag")
    block = _ANSWER_BLOCK.search(text[-400:])
    if block is not None:
        return Extraction(_unbold(block.group(1)), source_prefix + "answer_block")
    boxed = extract_boxed(text)
    if boxed is not None:
        return Extraction(boxed, source_prefix + "boxed")
    if "$" in text:
        text = _drop_currency_spans(text)
    announced = anchored(text[-TAIL:])
    if announced is not None:
        return Extraction(_unbold(announced), source_prefix + "answer_phrase")
    gsm = last_match(_GSM8K.finditer(text[-TAIL:]))
    if gsm is not None:
        return Extraction(gsm.group(1).strip(), source_prefix + "gsm8k")
    bold = last_match(_BOLD.finditer(text[-TAIL:]))
    if bold is not None and len(text[-TAIL:]) - bold.end() <= 10 and len(bold.group(1)) <= 100:
        return Extraction(bold.group(1).strip(), source_prefix + "bold")
    stripped = text.strip()
    short = len(stripped) <= 60 and "\n" not in stripped
    if short and len(PROSE_WORD.findall(stripped)) < 2 and WORD_RUN.search(stripped) is None:
        spans = list(MATH_SPAN.finditer(stripped))
        if spans and MATH_SPAN.sub("", stripped).strip(" ,.;:!"):
            # "So, $x = 5$.", "Thus $x = 1$ or $x = 6$": the math is the answer, the words are not.
            answer = span_run(stripped, spans, len(spans) - 1, forward=False)
            return Extraction(answer, source_prefix + "whole")
        return Extraction(stripped, source_prefix + "whole")
    found = last_value(text[-TAIL:])
    if found is not None:
        return Extraction(found[0], source_prefix + found[1])
    if not short or len(stated_word(stripped).split()) > 1:
        counted = number_word(text[-TAIL:])
        if counted is not None:
            return Extraction(counted, source_prefix + "number_word")
    return Extraction(stated_word(stripped), source_prefix + "whole") if short else None


def _drop_currency_spans(text: str) -> str:
    """`pays $15 for 3 items, so each costs $5`: dollar signs of amounts, not math delimiters.

    A `$...$` pair whose inside starts with a number and reads as prose loses both signs.
    """
    cuts: list[int] = []
    for span in MATH_SPAN.finditer(text):
        inner = span.group(4)
        if inner is not None and inner[:1].isdigit() and len(PROSE_WORD.findall(inner)) >= 2:
            cuts.extend((span.start(), span.end() - 1))
    if not cuts:
        return text
    pieces, last = [], 0
    for cut in cuts:
        pieces.append(text[last:cut])
        last = cut + 1
    pieces.append(text[last:])
    return "".join(pieces)


def _unbold(text: str) -> str:
    return text.replace("**", "").strip()


def extract_reference(label: str) -> str:
    """The reference's final answer: a bare answer, or one inside a full solution text."""
    text = label.strip()
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    gsm = last_match(_GSM8K.finditer(text))
    if gsm is not None:
        return gsm.group(1).strip()
    if _ANSWER_TAG.search(text):
        extracted = extract_answer(text)
        if extracted is not None:
            return extracted.text
    if "\n" in text or (len(text) > 120 and _looks_like_prose(text)):
        announced = anchored(text)
        if announced is not None:
            return announced
        found = last_value(text[-TAIL:])
        if found is not None:
            return found[0]
    return text


_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"\b[A-Za-z]{3,}\b")


def _looks_like_prose(text: str) -> bool:
    """A solution text has words; a long expression (an expanded polynomial) has none."""
    return len(_WORD.findall(_LATEX_COMMAND.sub(" ", text))) >= 3
