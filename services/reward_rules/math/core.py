"""One sample's verdict: label -> reference answers, response -> answer, compare.

Pure and synchronous; it runs inside the worker processes (pool.py), which give it a
deadline. Per-process LRU caches make the GRPO shape cheap: a reference shared by
16 responses is prepared once, and the same extracted answer (models repeat
themselves) is parsed and compared once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from services.reward_rules.math.choice import choice_letter, choice_option, extract_choice, prompt_options
from services.reward_rules.math.equivalence import Comparison, equivalent
from services.reward_rules.math.extract import (
    TAIL,
    Extraction,
    all_boxed,
    extract_answer,
    extract_reference,
    visible_text,
)
from services.reward_rules.math.nodes import FUNCTION_NAMES, Node, Num, Op, Rel, Seq, Text
from services.reward_rules.math.normalize import canonical_key, clean_answer, text_key
from services.reward_rules.math.numeric import free_symbols
from services.reward_rules.math.parse import ParseError, parse_answer
from services.reward_rules.math.sentences import PROSE_WORD, closing_words, leading_yes_no, states_phrase
from services.reward_rules.math.verdict import GradeOptions, MathVerdict

__all__ = ["GradeOptions", "MathVerdict", "grade"]

_DETAIL_CHARS = 80
_SOLE_NUMBER = re.compile(r"(?<![\w.^_/{\\])-?\d+(?:\.\d+)?(?![\w.^_/}])")
_YES_NO_WORDS = {"yes", "no"}
_LEADING_NUMBER = re.compile(r"^\s*(-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?)(?![\w.^/])")


@dataclass(frozen=True, slots=True)
class _Reference:
    answers: tuple[str, ...]  # cleaned reference answers; any of them is accepted
    choice: str | None
    rel_tol: float


class BadReference(ValueError):
    pass


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


@lru_cache(maxsize=4096)
def _reference(label: str, default_rel_tol: float) -> _Reference:
    """Parse a label once: plain text, a full solution, or `{"grader": "math", ...}`."""
    text = label.strip()
    rel_tol = default_rel_tol
    raw: list[Any] = [text]
    choice_forced = False
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            grader = data.get("grader", "math")
            if grader not in ("math", None):
                raise BadReference(f"label is for grader {grader!r}, not math")
            answer = data.get("answer", data.get("reference", data.get("solution")))
            if answer is None:
                raise BadReference("label object has no 'answer'")
            raw = list(answer) if isinstance(answer, list) else [answer]
            tolerance = data.get("rel_tol", data.get("tolerance"))
            if isinstance(tolerance, int | float) and not isinstance(tolerance, bool) and 0 <= tolerance < 1:
                rel_tol = float(tolerance)
            choice_forced = bool(data.get("choice", False))
    answers: list[str] = []
    for item in raw:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise BadReference(f"unsupported answer type {type(item).__name__}")
        item_text = item if isinstance(item, str) else json.dumps(item)
        cleaned = clean_answer(extract_reference(item_text))
        if cleaned:
            answers.append(cleaned)
    if not answers:
        raise BadReference("empty reference answer")
    choice = choice_letter(answers[0]) if len(answers) == 1 else None
    if len(answers) == 1 and choice is None:
        option = choice_option(answers[0])
        if option is not None:  # "(C) 12 meters": the letter, or the option's text
            choice = option[0]
            answers = [clean_answer(option[1]) or answers[0]]
    if choice_forced and choice is None:
        raise BadReference("label says choice but the answer is not a letter")
    return _Reference(tuple(answers), choice, rel_tol)


# `1011_2`, `2A_{16}`: digits with their base as a subscript.
_BASED = re.compile(r"^([0-9A-Za-z]{1,64})_\{?(\d{1,2})\}?$")


def _same_digits(gold: str, pred: str) -> bool:
    """`1011_2` and `1011`: the same digits, the base written on one side only."""
    for based, bare in ((gold, pred), (pred, gold)):
        match = _BASED.match(based)
        if match is not None and match.group(1) == bare and 2 <= int(match.group(2)) <= 36:
            return all(int(c, 36) < int(match.group(2)) for c in bare)
    return False


@lru_cache(maxsize=16384)
def _parsed(cleaned: str) -> Node | None:
    try:
        return parse_answer(cleaned)
    except (ParseError, RecursionError, ValueError, ZeroDivisionError):
        return None


@lru_cache(maxsize=16384)
def _compare(
    gold: str, pred: str, rel_tol: float, use_sympy: bool, percent: str
) -> tuple[bool, str, bool, bool]:
    """(equal, how, pred parsed, sympy used) for two cleaned answers."""
    if canonical_key(gold) == canonical_key(pred):
        return True, "same text", True, False
    if _same_digits(canonical_key(gold), canonical_key(pred)):
        return True, "same digits, base written on one side", True, False
    gold_node, pred_node = _parsed(gold), _parsed(pred)
    if pred_node is None:
        if text_key(gold) and text_key(gold) == text_key(pred) and not re.search(r"\d", gold):
            return True, "same words", False, False
        return False, "answer not parseable, text differs", False, False
    if gold_node is None:
        return False, "reference not parseable, text differs", True, False
    symbolic = None
    if use_sympy:
        # Imported here: the serving process imports core but never compares.
        from services.reward_rules.math.symbolic import sympy_equal

        symbolic = sympy_equal
    comparison = Comparison(rel_tol=rel_tol, symbolic=symbolic, percent=percent)
    equal = equivalent(gold_node, pred_node, comparison)
    if equal:
        how = "+".join(dict.fromkeys(comparison.methods)) or "equivalent"
    elif comparison.too_large:
        how = "values too large to compare; structures differ"
    else:
        how = "not equivalent"
    return equal, how, True, comparison.used_symbolic


def grade(label: str, response: str, options: GradeOptions | None = None, prompt: str = "") -> MathVerdict:
    """The verdict for one response against one label (pure; may be slow on sympy).

    `prompt` matters only when it lists multiple-choice options: a letter then answers a
    reference given as the option's text, and the option's text answers a letter.
    """
    opts = options or GradeOptions()
    try:
        reference = _reference(label, opts.rel_tol)
    except BadReference as error:
        return MathVerdict("bad_reference", f"invalid reference: {error}")
    choices = _prompt_choices(prompt) if prompt else ()
    if choices:
        reference = _with_options(reference, choices, opts.use_sympy, opts.percent)
    if reference.choice is not None:
        return _grade_choice(reference, response, dict(choices), opts)
    extraction = extract_answer(response)
    if extraction is None:
        return MathVerdict("no_answer", "no final answer found in the response")
    if (extraction.source.endswith(_GUESSED) or _retracted_box(extraction, response)) and _cut_off(
        visible_text(response)
    ):
        # No answer phrase, box or block, and the text stops mid-sentence or on a tool's
        # output: the model never committed to an answer, whatever numbers it wrote.
        return MathVerdict("no_answer", "response cut off before it states a final answer", truncated=True)
    if _list_size(reference) == 1 and extraction.source.endswith("boxed"):
        offered = _boxes_offered(response)
        if len(offered) > 1:
            return MathVerdict(
                "incorrect",
                f"several final boxes {_short(', '.join(offered))!r}: a hedge",
                extracted=True,
                boxed=True,
                prediction=", ".join(offered),
            )
    extra: list[str] = []
    items = _list_size(reference)
    if items > 1 and extraction.source.endswith("boxed"):
        # "part (a): \boxed{3} ... part (b): \boxed{8}" against the list reference "3, 8".
        # Exactly as many boxes as answers: more would let a response hedge.
        boxes = all_boxed(response)
        if len(boxes) == items:
            if _PART_LABELS.search(response[-4000:]):
                return _grade_parts(reference, boxes, opts)
            extra.append(clean_answer(", ".join(boxes)))
    return _grade_extraction(reference, extraction, opts, extra, response)


@lru_cache(maxsize=1024)
def _prompt_choices(prompt: str) -> tuple[tuple[str, str], ...]:
    """The prompt's options as (letter, cleaned text) pairs; () when it lists none."""
    return tuple((letter, clean_answer(text)) for letter, text in prompt_options(prompt).items())


@lru_cache(maxsize=4096)
def _with_options(
    reference: _Reference, choices: tuple[tuple[str, str], ...], use_sympy: bool, percent: str
) -> _Reference:
    """A reference seen through the prompt's options.

    The option's text (`\\frac{\\pi}{6}` when the prompt lists `C. \\frac{\\pi}{6}`)
    becomes the letter C, and a bare letter gains its option's text, so that either form
    answers either.
    """
    options = dict(choices)
    if reference.choice is not None:
        text = options.get(reference.choice)
        if text and all(len(a) == 1 for a in reference.answers):
            return _Reference((text,), reference.choice, reference.rel_tol)
        return reference
    if len(reference.answers) != 1:
        return reference
    matched = [
        letter
        for letter, text in choices
        if text and _compare(text, reference.answers[0], reference.rel_tol, use_sympy, percent)[0]
    ]
    return _Reference(reference.answers, matched[0], reference.rel_tol) if len(matched) == 1 else reference


def _grade_choice(
    reference: _Reference, response: str, options: dict[str, str], opts: GradeOptions
) -> MathVerdict:
    """A multiple-choice answer: the stated letter, else the option text it gives.

    No stated letter never falls back to the last letter or number written anywhere;
    several letters stated together ("B or D") are a hedge, and wrong.
    """
    assert reference.choice is not None
    extraction = extract_choice(response)
    if extraction is not None and extraction.source == "none_of_the_choices":
        return MathVerdict(
            "incorrect", "the response says none of the choices is right", extracted=True, undecided=True
        )
    if extraction is not None and not extraction.source.endswith("_content"):
        letters = extraction.text.split(",")
        if len(letters) > 1:
            return MathVerdict(
                "incorrect",
                f"several choices {extraction.text} from {extraction.source}: a hedge",
                extracted=True,
                boxed="boxed" in extraction.source,
                prediction=extraction.text,
            )
        equal = letters[0] == reference.choice
        return MathVerdict(
            "correct" if equal else "incorrect",
            f"choice {letters[0]} from {extraction.source} vs {reference.choice}",
            extracted=True,
            boxed="boxed" in extraction.source,
            parsed=True,
            prediction=letters[0],
        )
    if extraction is None:  # no letter at all: the option's text may be written out
        extraction = extract_answer(response)
        if extraction is not None and not _states_value(response, extraction):
            extraction = None
    if extraction is None:
        return MathVerdict(
            "incorrect", "no letter and no stated answer in the response", extracted=False, undecided=True
        )
    pred = clean_answer(extraction.text)
    # Prose ("Option D: too far") is matched to an option's words only: parsed as math it
    # is a product of single-letter symbols, costly to compare and never an option's value.
    prose = sum(word.lower() not in FUNCTION_NAMES for word in PROSE_WORD.findall(pred)) >= 2
    if options and pred:
        matched = [
            letter
            for letter, text in options.items()
            if text
            and (
                text_key(text) == text_key(pred)
                if prose
                else _compare(text, pred, reference.rel_tol, opts.use_sympy, opts.percent)[0]
            )
        ]
        if len(matched) == 1:
            equal = matched[0] == reference.choice
            return MathVerdict(
                "correct" if equal else "incorrect",
                f"{_short(pred)!r} from {extraction.source} is option {matched[0]} vs {reference.choice}",
                extracted=True,
                boxed="boxed" in extraction.source,
                parsed=True,
                prediction=matched[0],
            )
    if prose or all(len(answer) == 1 for answer in reference.answers):
        return MathVerdict(
            "incorrect",
            f"no letter stated; {_short(pred)!r} from {extraction.source} names no option",
            extracted=True,
            prediction=pred,
            undecided=True,
        )
    verdict = _grade_extraction(reference, extraction, opts, None, response)
    # Option text that does not match the chosen option's text: rules cannot tell
    # which option it means, so a verifier may decide.
    return verdict if verdict.verdict == "correct" else replace(verdict, undecided=True)


_GUESSED = ("last_number", "last_math", "number_word")
# How a text that was cut off ends: a connective, an operator, an open bracket or a comma.
_DANGLING = re.compile(
    r"(?:[,=+\-/(\[{^:]|\b(?:and|then|so|the|a|an|of|to|is|are|we|that|which|because|since|with|for|in"
    r"|on|by|but|or|as|if|let|get|gives|be|will|this|it|its|from|into|than|when|where|while|now|next|thus"
    r"|hence|therefore|equals|plus|minus|times))\s*$",
    re.I,
)
_FENCE = re.compile(r"```")


def _retracted_box(extraction: Extraction, response: str) -> bool:
    """Whether the last box is taken back right after it ("\\boxed{7}. Wait, that's wrong")."""
    if not extraction.source.endswith("boxed"):
        return False
    text = visible_text(response)
    last = text.rfind("\\boxed")
    after = last + len(extraction.text) + 8  # past `\\boxed{...}`: its content is not a retraction
    return last >= 0 and _RETRACTED.search(text, after, after + 150) is not None


def _cut_off(text: str) -> bool:
    """Whether a response stops before committing: mid-sentence, or on a code/output block."""
    stripped = text.rstrip()
    if not stripped:
        return False
    if _DANGLING.search(stripped[-40:]) is not None:
        return True
    if stripped.endswith("```"):
        return True  # the last thing written is a tool call or its output, not a conclusion
    return len(_FENCE.findall(stripped[-20_000:])) % 2 == 1  # inside an unclosed code block


_STATES = re.compile(
    r"(?:^|\s)(?:is|are|was|were|equals|be|gives|get|gets|takes|took|costs|needs|has|have|had|makes|totals"
    r"|remains?|comes\s+to|answers?)(?=\s|\$)|=",
    re.I,
)


_OPENER = re.compile(r"\s*(?:(?:so|thus|hence|therefore|finally|clearly)\s*,?\s*)?\$?", re.I)


def _states_value(response: str, extraction: Extraction) -> bool:
    """Whether a value found without an answer phrase is what the last sentence states.

    "Therefore the value is $\\frac{\\pi}{6}$." states it; "We get 78 days for the first
    leg and then more." only mentions a number, which must not pick an option.
    """
    if not extraction.source.endswith(_GUESSED):
        return True
    tail = visible_text(response)[-400:].rstrip()
    sentence = re.split(r"(?<=[.!?])\s+|\n", tail)[-1] if tail else ""
    where = sentence.rfind(extraction.text)
    if where < 0:
        return False
    if _OPENER.fullmatch(sentence[:where]) is not None:
        # "7 is the only prime among the options.": the value first, then what it is.
        return _STATES.search(sentence[where + len(extraction.text) :]) is not None
    if len(sentence) - where - len(extraction.text) > 12:
        return False
    return _STATES.search(sentence[:where]) is not None


# Between two boxes, words that take the first one back: the second is a correction.
_RETRACTED = re.compile(
    r"\b(?:wait|actually|no\b|nope|oops|mistake|wrong|incorrect|correction|instead|recheck|re-check|redo"
    r"|recompute|recalculate|error|sorry|not\s+right|let\s+me|correct\w*)\b",
    re.I,
)


def _boxes_offered(response: str) -> list[str]:
    """Different values boxed close together at the end, none taken back: a hedge.

    "\\boxed{5} (or equivalently \\boxed{6})" offers two answers; "\\boxed{5}. Wait, that's
    wrong ... \\boxed{6}" corrects the first. Boxes of one value (restated) are one answer.
    """
    text = visible_text(response)[-600:]
    spans = [m for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if len(spans) < 2:
        return []
    boxes = [box for box in all_boxed(text) if clean_answer(box)]
    if len(boxes) < 2:
        return []
    names = [re.match(r"\s*([a-zA-Z](?:_\{?\w+\}?)?)\s*=", box) for box in boxes[-2:]]
    if all(names) and len({n.group(1) for n in names if n}) == len(names):
        return []  # `\\boxed{x=2}` and `\\boxed{y=3}`: one answer, one box per unknown
    last_two_gap = text[spans[-2].end() : spans[-1].start()]
    if _RETRACTED.search(last_two_gap) is not None:
        return []
    keys = list(dict.fromkeys(canonical_key(clean_answer(box)) for box in boxes[-2:]))
    return boxes[-2:] if len(keys) > 1 else []


# "(a)", "part (b)", "Part 2", "b)": answers to the parts of one problem, in their order.
_PART_LABELS = re.compile(r"(?:\bpart\s*\(?[a-d1-4]\)?|(?:^|\s|\*)\([a-d]\)|(?:^|\n)\s*[a-d]\))", re.I)


def _top_level_items(text: str) -> list[str]:
    """`3, (1, 2), 8` -> ["3", "(1, 2)", "8"]: commas outside brackets split a list."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    items.append(text[start:].strip())
    return items


def _grade_parts(reference: _Reference, boxes: list[str], opts: GradeOptions) -> MathVerdict:
    """Part answers against a list reference: part k must answer item k (order matters)."""
    gold = _top_level_items(reference.answers[0].strip("\\{}"))
    preds = [clean_answer(box) for box in boxes]
    equal = len(gold) == len(preds) and all(
        _compare(clean_answer(g), p, reference.rel_tol, opts.use_sympy, opts.percent)[0]
        for g, p in zip(gold, preds, strict=True)
    )
    joined = ", ".join(preds)
    return MathVerdict(
        "correct" if equal else "incorrect",
        f"parts {_short(joined)!r} from boxed {'match' if equal else 'do not match'} "
        f"{_short(reference.answers[0])!r} in order",
        extracted=True,
        boxed=True,
        parsed=True,
        prediction=joined,
    )


def _list_size(reference: _Reference) -> int:
    """How many answers a list reference (`3, 8`, `\\{2, 7\\}`) holds; 1 for anything else."""
    node = _parsed(reference.answers[0])
    return len(node.items) if isinstance(node, Seq) and node.open in ("", "{") else 1


# One comma between digits, in an answer that is one number or names one (`x = 2,5`).
_DECIMAL_COMMA = re.compile(r"^((?:[a-zA-Z]\w*\s*=\s*)?-?\d+),(\d+)$")


def _decimal_comma(pred: str, reference: _Reference, rule: str) -> str | None:
    """`1,5` read as 1.5 (see GradeOptions.decimal_comma), or None to keep it a list."""
    match = _DECIMAL_COMMA.match(pred)
    if match is None or rule == "never":
        return None
    if rule == "auto":
        node = _parsed(reference.answers[0])
        if isinstance(node, Op) and node.op == "neg":
            node = node.args[0]
        if len(match.group(2)) == 3 or not isinstance(node, Num):
            return None
    return f"{match.group(1)}.{match.group(2)}"


def _word_reference(reference: _Reference) -> bool:
    """A reference that is words (`\\text{Monday}`, `odd`), not a value."""
    return all(
        not re.search(r"\d", gold) and isinstance(_parsed(gold), Text | None) for gold in reference.answers
    )


def _restatement(pred: str, reference: _Reference, opts: GradeOptions) -> str | None:
    """`\\frac{1}{4}, or 25\\%` against one value: the first form, which the second restates.

    Two forms of one value (a percent read as its value, a decimal) are one answer, not a
    list; two different values (`1, 6`) stay a list.
    """
    if "," not in pred or _list_size(reference) > 1:
        return None
    items = _top_level_items(pred)
    if len(items) != 2 or not all(items) or canonical_key(items[0]) == canonical_key(items[1]):
        return None
    nodes = [_parsed(item) for item in items]
    if any(node is None or isinstance(node, Seq | Rel) or free_symbols(node) for node in nodes):
        return None
    same = _compare(items[0], items[1], reference.rel_tol, False, "value")[0]
    return items[0] if same else None


def _grade_extraction(
    reference: _Reference,
    extraction: Extraction,
    opts: GradeOptions,
    extra: list[str] | None = None,
    response: str = "",
) -> MathVerdict:
    pred = clean_answer(extraction.text)
    if not pred:
        return MathVerdict("no_answer", f"empty answer in {extraction.source}")
    decimal = _decimal_comma(pred, reference, opts.decimal_comma)
    if decimal is not None and opts.decimal_comma == "always":
        pred = decimal
    candidates = [pred, *(extra or [])]
    if decimal is not None and decimal != pred:
        candidates.append(decimal)
    option = choice_option(pred) if reference.choice is None else None
    if option is not None:
        candidates.append(clean_answer(option[1]))  # "B) 15" against 15: the option's value
    restated = _restatement(pred, reference, opts)
    if restated is not None:
        candidates.append(restated)
    if response and not extraction.source.endswith("boxed") and _word_reference(reference):
        tail = visible_text(response)[-TAIL:]
        verdict = leading_yes_no(tail) if _YES_NO_WORDS & {text_key(g) for g in reference.answers} else None
        if verdict is not None:
            candidates.append(verdict)
        words = closing_words(tail) if extraction.source.endswith(("last_number", "last_math")) else None
        if words is not None:
            candidates.append(clean_answer(words))
        if not extraction.source.endswith("answer_tag") and states_phrase(tail, reference.answers[0]):
            candidates.append(reference.answers[0])  # "There are infinitely many solutions."
    if extraction.source.endswith(("answer_phrase", "whole", "answer_tag")):
        leading = _LEADING_NUMBER.match(pred) if _parsed(pred) is None else None
        if leading:
            candidates.append(clean_answer(leading.group(1)))
        elif any(word.lower() not in FUNCTION_NAMES for word in PROSE_WORD.findall(pred)):
            # "It costs 50": a short sentence with one number states it.
            numbers = _SOLE_NUMBER.findall(pred)
            if len(numbers) == 1:
                candidates.append(clean_answer(numbers[0]))
    parsed = symbolic = False
    how = "not equivalent"
    for candidate in candidates:
        for gold in reference.answers:
            equal, how, parsed_now, symbolic_now = _compare(
                gold, candidate, reference.rel_tol, opts.use_sympy, opts.percent
            )
            parsed |= parsed_now
            symbolic |= symbolic_now
            if equal:
                return MathVerdict(
                    "correct",
                    f"{_short(candidate)!r} from {extraction.source} equals {_short(gold)!r} ({how})",
                    extracted=True,
                    boxed="boxed" in extraction.source,
                    parsed=parsed,
                    symbolic=symbolic,
                    prediction=candidate,
                )
    return MathVerdict(
        "incorrect",
        f"{_short(pred)!r} from {extraction.source} does not match {_short(reference.answers[0])!r} ({how})",
        extracted=True,
        boxed="boxed" in extraction.source,
        parsed=parsed,
        symbolic=symbolic,
        prediction=pred,
        undecided=_free_text(pred),
    )


def _free_text(pred: str) -> bool:
    """An answer in words (a sentence, `\\text{...}`) that the rules compare only as text.

    `yes`/`no` are words the rules do decide.
    """
    return isinstance(_parsed(pred), Text | None) and text_key(pred) not in _YES_NO_WORDS
