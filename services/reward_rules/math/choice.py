"""Multiple choice: which letter a response chooses, and what a choice reference gives.

A final choice is stated: by a box, an answer phrase or an explicit statement ("the
correct option is B", "Solution: Choice_B"), or by a closing line or sentence that ends
on a letter. Letters named while analysing options ("Option D: 78 days - too far") are
not statements, and there is no fallback to the last letter written anywhere: a policy
that names every letter somewhere must not be paid for it. A reference may give the
letter with its option's text (`(C) 12 meters`, `A. Paris`); the prompt's options
(`prompt_options`) map option text to letters both ways.
"""

from __future__ import annotations

import re

from services.reward_rules.math.extract import TAIL, Extraction, extract_boxed, last_anchor, visible_text
from services.reward_rules.math.sentences import last_match

__all__ = ["box_letters", "choice_letter", "choice_option", "extract_choice", "prompt_options"]

_CHOICE_REF = re.compile(r"^\s*\(?\s*([A-J])\s*\)?\s*[.:)]?\s*$")
_CHOICE_PAREN_LOWER = re.compile(r"^\s*\(([a-j])\)\s*[.:]?\s*$")  # "(b)": a letter, not a variable


def choice_letter(reference: str) -> str | None:
    """The letter when a reference is a multiple-choice answer (`B`, `(B)`, `B.`)."""
    text = reference.strip().strip("$")
    text = re.sub(r"\\text(?:bf)?\{([^{}]*)\}", r"\1", text)
    match = _CHOICE_REF.match(text) or _CHOICE_PAREN_LOWER.match(text)
    return match.group(1).upper() if match else None


_CHOICE_OPTION = re.compile(r"^\s*(?:\(([A-J])\)|([A-J])[.:)])\s*(\S.*)$", re.S)
_LEADING_CHOICE = re.compile(r"^\s*(?:\*\*)?\(?([A-J])\)?(?:\*\*)?(?:[.:)]|\s*$)")
# A letter that a response rules out: "not A", "cannot be D", "不是 A", "A and B both fail".
_NEGATED_AFTER = re.compile(
    r"^\)?\s*(?:(?:,\s*(?:and|or)?|and|or|&|et|y|和|、)\s*\(?[A-J]\)?\s*)*(?:is|are|was|were)?\s*(?:both\s+|all\s+|also\s+)?"
    r"(?:wrong|incorrect|false|invalid|impossible|eliminated|ruled\s+out|not\b|fails?\b|violates?|contradicts?"
    r"|faux|fausses?|incorrecte?s?|falsch|错|不对|不正确)",
    re.I,
)


def choice_option(reference: str) -> tuple[str, str] | None:
    """A reference that gives a letter and its option text: `(C) 12 meters`, `A. Paris`."""
    match = _CHOICE_OPTION.match(reference.strip().strip("$"))
    if match is None:
        return None
    return (match.group(1) or match.group(2)), match.group(3).strip()


def _is_pronoun(text: str, match: re.Match[str]) -> bool:
    """ "I think", "I believe": the letter I counts only as `(I)`, `I.` or `I)`."""
    return match.group(1) == "I" and not re.match(r"\)|[.:]\s|[.:]?$", text[match.end(1) : match.end(1) + 2])


# What states a final choice, wherever it stands: "Solution: Choice_B", "the correct option
# is (B)", "I choose B", "option B is correct". Analysis ("Option D: 78 days - too far",
# "Step 7: D. ... is not correct") names letters without stating them.
_LETTER = r"[(\[]? ?([A-J]) ?[)\]]?(?![\w(])"
_LETTER_LIST = (
    r"[(\[]? ?([A-J]) ?[)\]]?(?![\w(])"
    r"((?: ?(?:,|/|\bor\b|\band\b|&) ?(?:(?:option|choice) )?[(\[]? ?[A-J] ?[)\]]?(?![\w(]))*)"
)
_STATEMENTS = (
    re.compile(r"\bChoice_([A-J])\b()"),
    re.compile(
        r"(?:correct|right|best|final|only\s+(?:valid|possible))\s+(?:answer|option|choice|response)"
        r"(?:\s+(?:here|then))?\s*(?:\*\*)?\s*(?:is|would\s+be|must\s+be|:)\s*(?:\*\*)?\s*"
        r"(?:(?:option|choice|answer)\s+)?(?:\*\*)?" + _LETTER_LIST,
        re.I,
    ),
    re.compile(
        r"(?:\bI\s+(?:would\s+)?(?:choose|pick|select|go\s+with)|\b(?:we|so|thus|hence|therefore),?\s+"
        r"(?:choose|pick|select))\s+(?:option\s+|choice\s+|answer\s+)?(?:\*\*)?" + _LETTER_LIST,
        re.I,
    ),
    re.compile(
        r"\b(?:option|choice|answer)\s+" + _LETTER + r"\s*(?:\*\*)?\s*(?:is|must\s+be)\s+(?:the\s+)?"
        r"(?:correct|right|true|valid|best|answer)\b()",
        re.I,
    ),
    # "A is correct, I believe.", "Between C and D, C is correct", "Only (A) works".
    re.compile(
        r"(?:^|(?<=[\s,;:*]))(?:only\s+)?(?:\*\*)?" + _LETTER + r"(?:\*\*)?\s+"
        r"(?:is\s+(?:the\s+)?(?:correct|right)\b|works\b|holds\b|fits\b)()"
    ),
    # "... not A; it's B.", "I'd go with C", "正确选项是C".
    re.compile(r"\b(?:it's|it\s+is|it\s+must\s+be)\s+" + _LETTER + r"(?=\s*(?:[.!]|$))()", re.I),
    re.compile(
        r"\b(?:I'd|I\s+will|I'll)\s+(?:go\s+with|choose|pick|select)\s+(?:option\s+)?" + _LETTER_LIST, re.I
    ),
    re.compile(r"(?:正确选项|正确答案|选项|选择|应选|选)\s*(?:是|为|:|：)?\s*\(?([A-J])\)?(?![A-Za-z])()"),
)
# A sentence that ends the response on a letter: "Therefore C.", "Not A, not B, definitely C."
_CLOSING_LETTER = re.compile(r"(?:^|[\s,;:(*])\(?([A-J])\)?\**\s*[.!]?\s*$")
_RULED_OUT = re.compile(
    r"(?:\bnot|n't|\bcannot(?:\s+be)?|\bnever|\bout|\beliminates?|\bexcept|\bexcludes?|\bnor|\bif|\bwhether"
    r"|\band|\bor|\bbetween|\bvs\.?|\bversus|\bthan)\s*(?:option\s+|choice\s+)?\(?\s*$",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|suppose|assume|assuming|check|checking|test)\s*(?:that\s+)?$", re.I
)
# A closing line that is only a letter: "**B**", "(B)", "B.", "B. 12 meters", "Answer: **C**".
_LETTER_LINE = re.compile(r"^[\s*#>]*+[(\[]? ?([A-J]) ?[)\]]?(?:[.:)] *(?:\S.{0,100})?|\**)?\s*$")
_NONE_OF = re.compile(
    r"\bnone\s+of\s+(?:the\s+)?(?:above|choices|options|answers|answer\s+choices|these)\b", re.I
)
_UNWRAP = re.compile(r"\\(?:text(?:bf|rm|it)?|mathrm|mathbf|textsf)\s*\{([^{}]*)\}")


def _letters(found: re.Match[str]) -> list[str]:
    """The letters a statement names: one, or several ("A or C"), in order, once each."""
    letters = [found.group(1)]
    rest = found.group(2) if found.re.groups >= 2 and found.group(2) else ""
    letters += re.findall(r"[A-J]", rest)
    return list(dict.fromkeys(letter.upper() for letter in letters))


def box_letters(content: str) -> list[str] | None:
    """The letters a box states (`B`, `(C) 12`, `A, C`); None when it holds something else.

    `\\mathrm{E}*2` holds an expression, not the choice E.
    """
    text = _UNWRAP.sub(r"\1", content).replace("*", " ").strip().strip("$").strip()
    letter = choice_letter(text)
    if letter is not None:
        return [letter]
    option = choice_option(text)
    if option is not None:
        return [option[0]]
    if re.fullmatch(r"[a-j]", text):  # `\\boxed{a}` on a multiple-choice question
        return [text.upper()]
    several = re.fullmatch(r"\(?([A-J])\)?((?:\s*(?:,|/|or|and|&)\s*\(?[A-J]\)?)+)", text)
    if several is not None:
        return list(dict.fromkeys([several.group(1), *re.findall(r"[A-J]", several.group(2))]))
    return None


def _stated(text: str) -> tuple[list[str], str] | None:
    """The last statement of a choice in `text`: (letters, source)."""
    best: tuple[int, list[str], str] | None = None
    for pattern in _STATEMENTS:
        found = last_match(
            m
            for m in pattern.finditer(text)
            if _HYPOTHETICAL.search(text[max(0, m.start() - 20) : m.start()]) is None
        )
        if found is not None and (best is None or found.end() > best[0]):
            best = (found.end(), _letters(found), "choice_statement")
    anchor = last_anchor(text)
    if anchor is not None and (best is None or anchor.end() >= best[0] - 1):
        clause = _UNWRAP.sub(r"\1", text[anchor.end() : anchor.end() + 200]).replace("**", " ")
        clause = re.sub(r"^[\s:=]*(?:\$\s*)?(?:\\boxed\{)?\s*(?:option|choice)?\s*", "", clause, flags=re.I)
        # "(b)", "b.": a letter, not a variable or the article "a" ("the answer is a prime").
        lower = re.match(r"\(([a-j])\)(?=$|[\s.,;:$}])|([a-j])\s*(?:[.,;:!)](?![a-z])|$)", clause)
        if lower is not None:
            return [(lower.group(1) or lower.group(2)).upper()], "answer_phrase"
        listed = re.match(_LETTER_LIST + r"(?=$|[\s.,;:$}!)]|[^\x00-\x7f])", clause)
        if listed is not None and not _is_pronoun(clause, listed):
            letters = _letters(listed)
            if _NEGATED_AFTER.match(clause[listed.end(1) : listed.end(1) + 60]) is None:
                return letters, "answer_phrase"
    return (best[1], best[2]) if best is not None else None


def extract_choice(response: str) -> Extraction | None:
    """The letter a multiple-choice response states as its final choice, or the option text.

    A box, the last explicit statement ("Answer: (B)", "the correct option is B",
    "Solution: Choice_B") or a closing line that is only a letter counts; letters named
    while analysing options do not, and there is no fallback to the last letter written
    anywhere. Several letters stated together ("B or D") come back joined by commas: a
    hedge. Content instead of a letter (`\\boxed{\\frac{\\pi}{6}}`) comes back with a
    `_content` source; an empty text when it says none of the choices is right; None
    when it states no choice at all.
    """
    text = visible_text(response)
    if not text:
        return None
    tail = text[-TAIL:]
    if _NONE_OF.search(tail[-300:]) is not None:
        return Extraction("", "none_of_the_choices")
    boxed = extract_boxed(text)
    if boxed is not None:
        letters = box_letters(boxed)
        if letters is not None:
            return Extraction(",".join(letters), "boxed")
    stated = _stated(tail)
    if stated is not None:
        return Extraction(",".join(stated[0]), stated[1])
    lines = [line for line in tail.splitlines() if line.strip()]
    if lines:
        last = _UNWRAP.sub(r"\1", lines[-1]).replace("$", " ").replace("\\ ", " ")
        line = _LETTER_LINE.match(last)
        if line is not None:
            return Extraction(line.group(1), "letter_line")
        closing = _CLOSING_LETTER.search(last[-80:])
        if closing is not None and not _is_pronoun(last[-80:], closing):
            before = last[-80:][: closing.start(1)].rstrip("( ")
            if _RULED_OUT.search(before + " ") is None:
                return Extraction(closing.group(1), "closing_letter")
    if boxed is not None:
        return Extraction(boxed.strip(), "boxed_content")
    leading = _LEADING_CHOICE.match(text)
    if leading is not None:
        return Extraction(leading.group(1), "leading_letter")
    return None


# An option line of a prompt: "A. 12", "(B) 7 days", "C) x", "D: \\frac{1}{2}".
_OPTION_LINE = re.compile(r"^\s*(?:\*\*)?(?:\(([A-J])\)|([A-J])\s*[.):：])(?:\*\*)?\s+(\S.{0,300}?)\s*$")
_INLINE_OPTION = re.compile(r"\(([A-J])\)\s*(.+?)\s*(?=\([A-J]\)|$)")


def prompt_options(prompt: str) -> dict[str, str]:
    """The options of the last multiple-choice block in a prompt, letter -> text.

    Lines (`A. 12`, `(B) 7 days`, `C) x`) or one line of `(A) 1 (B) 2 (C) 3`; letters in
    order from A, at least two. Few-shot prompts hold several blocks: the last one is
    the question's.
    """
    if not prompt or len(prompt) > 200_000:
        return {}
    found: dict[str, str] = {}
    block: dict[str, str] = {}
    for line in prompt[-20_000:].splitlines():
        inline = list(_INLINE_OPTION.finditer(line))
        letters = [m.group(1) for m in inline]
        if len(letters) >= 2 and letters == [chr(ord("A") + k) for k in range(len(letters))]:
            found = {m.group(1): m.group(2).strip() for m in inline}
            block = {}
            continue
        option = _OPTION_LINE.match(line)
        if option is not None:
            letter = option.group(1) or option.group(2)
            if letter == "A":
                block = {}
            if letter == chr(ord("A") + len(block)):
                block[letter] = option.group(3)
                if len(block) >= 2:
                    found = dict(block)
    return found
