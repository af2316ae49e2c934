"""Multiple choice: which letter a response chooses, and what a choice reference gives.

The letter an answer phrase or a box names wins over letters named elsewhere ("C,
because A and B both fail"); outside them, a leading "B." or the last letter the
response does not rule out ("It cannot be D", "不是 A", "A and B are wrong") counts.
A reference may give the letter with its option's text (`(C) 12 meters`, `A. Paris`).
"""

from __future__ import annotations

import re

from services.reward_rules.math.extract import TAIL, Extraction, anchored, extract_boxed, visible_text

__all__ = ["choice_letter", "choice_option", "extract_choice"]

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
_NEGATED_BEFORE = re.compile(
    r"(?:\bnot|n't|\bcannot(?:\s+be)?|\bnever|\brule\s+out|\beliminates?|\bexcept|\bexcludes?|\bnor|\bpas"
    r"|\bno\s+es|\bnicht|\bkeine?|不是|不选|排除|而非)\s*(?:be\s+|option\s+|choice\s+)?\(?\s*$",
    re.I,
)
_NEGATED_AFTER = re.compile(
    r"^\)?\s*(?:(?:,\s*(?:and|or)?|and|or|&|et|y|和|、)\s*\(?[A-J]\)?\s*)*(?:is|are|was|were)?\s*(?:both\s+|all\s+|also\s+)?"
    r"(?:wrong|incorrect|false|invalid|impossible|eliminated|ruled\s+out|not\b|fails?\b|violates?|contradicts?"
    r"|faux|fausses?|incorrecte?s?|falsch|错|不对|不正确)",
    re.I,
)
_CHOICE_LETTER = re.compile(r"(?:^|[\s(\[*{:]|[^\x00-\x7f])\(?([A-J])\)?(?=$|[\s).,:;*\]}]|[^\x00-\x7f])")


def choice_option(reference: str) -> tuple[str, str] | None:
    """A reference that gives a letter and its option text: `(C) 12 meters`, `A. Paris`."""
    match = _CHOICE_OPTION.match(reference.strip().strip("$"))
    if match is None:
        return None
    return (match.group(1) or match.group(2)), match.group(3).strip()


def _is_pronoun(text: str, match: re.Match[str]) -> bool:
    """ "I think", "I believe": the letter I counts only as `(I)`, `I.` or `I)`."""
    return match.group(1) == "I" and not re.match(r"\)|[.:]\s|[.:]?$", text[match.end(1) : match.end(1) + 2])


def _chosen_letter(text: str, first: bool) -> str | None:
    """The letter a piece of text chooses, skipping letters it rules out."""
    cleaned = re.sub(r"\\text(?:bf)?\{([^{}]*)\}", r"\1", text).replace("*", " ")
    letter = choice_letter(cleaned)
    if letter is not None:
        return letter
    kept = [
        m
        for m in _CHOICE_LETTER.finditer(cleaned)
        if not _is_pronoun(cleaned, m)
        and _NEGATED_BEFORE.search(cleaned[max(0, m.start(1) - 30) : m.start(1)]) is None
        and _NEGATED_AFTER.match(cleaned[m.end(1) : m.end(1) + 60]) is None
    ]
    if not kept:
        return None
    if first:
        return kept[0].group(1) if kept[0].start(1) <= 40 else None
    return kept[-1].group(1)


def extract_choice(response: str) -> Extraction | None:
    """The chosen letter in a multiple-choice response (or the option text it gives).

    The letter the answer phrase names wins over letters named elsewhere ("C, because A
    and B both fail"); outside an answer phrase, a letter the response rules out ("It
    cannot be D", "不是 A") never counts.
    """
    text = visible_text(response)
    if not text:
        return None
    announced = ((extract_boxed(text), "boxed"), (anchored(text[-TAIL:], raw=True), "answer_phrase"))
    for found, source in announced:
        if found is not None:
            letter = _chosen_letter(found, first=True)
            if letter is not None:
                return Extraction(letter, source)
            if _CHOICE_LETTER.search(found) is None:
                # Option text instead of its letter ("\\boxed{42}") is answered by content.
                return Extraction(found.strip(), source + "_content")
            # Only letters it rules out ("the answer is not A; it's B"): read on.
    leading = _LEADING_CHOICE.match(text)
    if leading is not None:
        return Extraction(leading.group(1), "leading_letter")
    letter = _chosen_letter(text[-300:], first=False)
    return Extraction(letter, "last_letter") if letter else None
