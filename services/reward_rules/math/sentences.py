"""The value a sentence states: the sentence-level part of finding an answer.

Pure and linear in the text (regexes without nested quantifiers over bounded tails).
Used by extract.py where a response, or the clause after "the answer is", is prose:
"Final Answer: The smallest possible value of $k$ is 17." states 17 (after the last
copula), "Donc il reste 64 € à payer dans 3 mois." states 64 € (a number after "dans",
"in", "after" is a circumstance), and a closing remark about the work ("This took 4
steps to check.") states nothing.
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Iterator

__all__ = [
    "HEDGE",
    "MATH_SPAN",
    "PROSE_WORD",
    "WORD_RUN",
    "closing_words",
    "hedged",
    "last_match",
    "last_value",
    "leading_yes_no",
    "number_word",
    "sentence_value",
    "span_run",
    "span_text",
    "stated_word",
    "states_phrase",
]


def last_match(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    """The last match of a finditer (the final answer is the last one written)."""
    tail = deque(matches, maxlen=1)
    return tail[0] if tail else None


_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?(?:\s*\\?%)?"
    r"|-?\\[dt]?frac\{-?\d+\}\{\d+\}"
)
MATH_SPAN = re.compile(
    r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<!\\)\$((?:\\\$|[^$\n])+?)(?<!\\)\$", re.S
)
PROSE_WORD = re.compile(r"(?<![\\a-zA-Z{])[a-zA-Z]{3,}")
# "... is 17": what a sentence says its subject is (the last copula in it).
_COPULA = re.compile(
    r"(?:^|\s)(?:is|are|was|were|equals|equal\s+to|be|comes\s+to|est|sont|vaut|es|son|ist|sind|é|è|равно|равен)"
    r"(?=\s|\$)|=|是|为|為|等于|は",
    re.I,
)
# A number after these words is a circumstance ("in 3 months", "dans 3 mois"), not the answer.
_CIRCUMSTANCE = re.compile(
    r"(?:^|[\s(])(?:in|within|after|before|during|every|per|(?:divided|multiplied)\s+by|modulo|mod|dans|après|avant|pendant|durante|dentro\s+de|"
    r"después\s+de|antes\s+de|nach|innerhalb|vor|через)\s+(?:the\s+|les\s+|los\s+|las\s+|den\s+)?$"
    r"|(?:用了|花了|经过|过了|用時|に)\s*$",
    re.I,
)
# "attained at $x = 1$", "when x = 2": a variable's value after these words is a condition
# on the answer, not the answer ("The minimum is $2$, attained at $x = 1$." states 2).
_CONDITION = re.compile(
    r"(?:^|[\s,(])(?:at|when|where|if|for|whenever|with|iff|en|cuando|para|wenn|für|bei|当|时)\s*(?:\$\s*)?"
    r"(?:[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*)?$",
    re.I,
)
_ASSIGNED = re.compile(r"^\s*[a-zA-Z](?:_\{?\w+\}?)?\s*=(?!=)")
# Two letters in a script without spaces ("共有", "学生") make a short text prose, not an answer.
WORD_RUN = re.compile(r"[^\W\d_a-zA-Z]{2,}")
# A remark about the work, not a result: "This took 4 steps to check.", "I verified 3 cases."
_META = re.compile(
    r"\b(?:steps?|took|used|checks?|checked|checking|verif\w*|tried|attempts?|substitutions?|hope"
    r"|confirm\w*|sanity|double-check\w*)\b",
    re.I,
)
_APPROX_BEFORE = re.compile(
    r"(?:≈|\\approx|~|about|roughly|approximately|environ|aproximadamente)\s*\$?\s*$", re.I
)
_SENTENCE_BREAK = re.compile(r"(?<!\\)[.!?](?=\s|$)|[。！？]|\n")

# What may join math spans into one answer: `$x = 1$ or $x = 6$`, `$2$, $3$ and $5$`.
_SPAN_JOIN = re.compile(r"\s*(?:,|;|and|or|et|ou|y|o|und|oder|和|或|、)?\s*(?:,\s*)?(?:and|or)?\s*", re.I)


def span_text(span: re.Match[str]) -> str:
    return next(g for g in span.groups() if g is not None)


def span_run(text: str, spans: list[re.Match[str]], index: int, forward: bool) -> str:
    """The span at `index` and its neighbours that only a comma, "and" or "or" separate."""
    run = [spans[index]]
    step = 1 if forward else -1
    k = index + step
    while 0 <= k < len(spans) and len(run) < 16:
        left, right = (run[-1], spans[k]) if forward else (spans[k], run[-1])
        gap = text[left.end() : right.start()]
        if not gap.strip() or _SPAN_JOIN.fullmatch(gap) is None or len(gap) > 12:
            break
        run.append(spans[k])
        k += step
    if not forward:
        run.reverse()
    items = [span_text(span) for span in run]
    # `-$\\pi/6$`: a minus sign written before the delimiters belongs to the value.
    start = run[0].start()
    if start and text[start - 1] in "-−" and (start == 1 or text[start - 2] in " \t\n(:=*"):
        items[0] = "-" + items[0].strip()
    return ", ".join(items)


def _is_sentence(text: str) -> bool:
    """Prose that holds a value ("The smallest possible value of $k$ is 17"), not an answer."""
    if PROSE_WORD.match(text):
        return re.search(r"\d|\$", text) is not None and len(text.split()) >= 3
    # Scripts without spaces between words: "一共有 25 个".
    return re.match(r"[^\W\d_a-zA-Z]{2,}", text) is not None and re.search(r"\d|\$", text) is not None


def sentence_value(clause: str) -> str:
    """The value a sentence states: after its last copula, else its answer-like number.

    "The number of red marbles Tom has is 42" -> "42"; "Priya has 56 stickers in total"
    -> "56"; "il reste 64 € à payer dans 3 mois" -> "64 €" (a number after "dans", "in",
    "after"... is a circumstance). A clause that is not prose comes back unchanged.
    """
    clause = clause.strip()
    offered = _offered(clause)
    if offered is not None:
        return offered
    if not _is_sentence(clause):
        return stated_word(clause)
    # Copulas inside math spans belong to the math (`$x = 3$`): search outside them.
    masked = MATH_SPAN.sub(lambda m: "#" * len(m.group(0)), clause)
    copula = last_match(_COPULA.finditer(masked))
    if copula is not None:
        rest = clause[copula.end() :].strip()
        if rest and re.search(r"\d|\\|\$", rest):
            return rest
    picked = _pick_number(clause)
    return picked if picked is not None else clause


def stated_word(clause: str) -> str:
    """ "The capital is Paris" -> "Paris": a short word answer after a copula; else unchanged."""
    if PROSE_WORD.match(clause) is None or len(clause.split()) < 3:
        return clause
    copula = last_match(_COPULA.finditer(clause))
    if copula is None or copula.group(0).strip() in ("=", ""):
        return clause
    rest = clause[copula.end() :].strip()
    return rest if rest and len(rest.split()) <= 3 and not rest.lower().startswith("not") else clause


def _candidates(sentence: str) -> list[re.Match[str]]:
    """Math spans, and numbers outside them, in reading order."""
    spans = list(MATH_SPAN.finditer(sentence))
    starts = [span.start() for span in spans]
    found = list(spans)
    for number in _NUMBER.finditer(sentence):
        k = bisect.bisect_right(starts, number.start()) - 1
        if k < 0 or number.start() >= spans[k].end():
            found.append(number)
    found.sort(key=lambda m: m.start())
    return found


# "$f(x) = x$ for all real $x$": what a quantifier ranges over is not the answer.
_QUANTIFIED = re.compile(
    r"(?:^|\s)(?:for\s+(?:all|every|any|each|some)|pour\s+tout|para\s+todo|für\s+alle|∀)"
    r"(?:\s+[a-zA-Z]+){0,3}\s*\$?\s*$",
    re.I,
)


def _is_condition(text: str, start: int, value: str) -> bool:
    """Whether the value at `start` is a condition (`at $x = 1$`, `when x = 2`, `for all $x$`)."""
    before = text[max(0, start - 40) : start]
    if _QUANTIFIED.search(before) is not None:
        return True
    if ("\\to" in value or "→" in value) and re.search(r"(?:^|\s)as\s*\$?\s*$", before, re.I):
        return True  # "The limit is $0$ as $n \\to \\infty$."
    before = before[-24:]
    if _ASSIGNED.match(value) is not None:
        return _CONDITION.search(before) is not None
    return re.search(r"[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*\$?\s*$", before) is not None and (
        _CONDITION.search(before) is not None
    )


def _same_sentence(text: str, end: int) -> str:
    """The text of the sentence that `end` is in, up to `end`."""
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(text, 0, end)]
    return text[breaks[-1] if breaks else 0 : end]


_MODIFIER = re.compile(r"-[a-zA-Z]")


# A sentence that states its answer first, as the count of its subject: "5 cars drove
# through the traffic jam in the first 15 minutes.", "So 16 people think that horse #12 wins."
_LEADING_COUNT = re.compile(
    r"^\s*(?:(?:so|thus|therefore|hence|in\s+total|altogether|overall|finally|in\s+all)\s*,?\s+)?"
    r"\$?(-?\d[\d,]*(?:\.\d+)?)\$?\s+"
    r"(?!(?:times|plus|minus|divided|multiplied|over|of|out|more|less|fewer|percent|and|or|to|x|by|is|are"
    r"|was|were|equals|from|into|per|squared|cubed)\b)[a-zA-Z]{2,}",
    re.I,
)
_INTRODUCTORY = re.compile(r"[^,.;:]{0,30},|\s*(?:later|ago|earlier|after|before|from\s+now)\b", re.I)
_COORDINATED = re.compile(r"[a-zA-Z\s]{0,20}?(?:\band\b|\bor\b|\bplus\b|,)\s*\$?-?\d")
_COPULA_THEN_VALUE = re.compile(
    r"(?:^|\s)(?:is|are|was|were|equals|equal\s+to|makes|gives)\s+\$?-?\d|=", re.I
)


def _pick_number(sentence: str) -> str | None:
    """The answer-like value of one sentence: the last one not introduced by "in", "dans"..."""
    leading = _LEADING_COUNT.match(sentence)
    if (
        leading is not None
        and _COPULA_THEN_VALUE.search(sentence) is None
        # "12 apples and 3 bananas": several counts side by side state no one answer.
        and _COORDINATED.match(sentence, leading.end()) is None
        # "10 minutes later, he had 25 marbles.": an introductory phrase, not the subject.
        and _INTRODUCTORY.match(sentence, leading.end()) is None
    ):
        return leading.group(1)
    found = _candidates(sentence)
    if not found:
        return None
    kept = [
        m
        for k, m in enumerate(found)
        if _CIRCUMSTANCE.search(sentence[max(0, m.start() - 24) : m.start()]) is None
        and not (k and _is_condition(sentence, m.start(), m.group(0).strip("$")))
        # "1/6 ≈ 0.167": the rounded value restates the one before it.
        and not (k and _APPROX_BEFORE.search(sentence[max(0, m.start() - 12) : m.start()]))
        # "the 12-page report", "a 5-year-old": a number in a compound modifier describes.
        and not (len(found) > 1 and _MODIFIER.match(sentence, m.end()) is not None)
    ]
    chosen = (kept or found)[-1]
    groups = [g for g in chosen.groups() if g is not None] if chosen.re is MATH_SPAN else []
    return groups[0] if groups else chosen.group(0)


def last_value(tail: str) -> tuple[str, str] | None:
    """The answer-like value at the end of a text: (value, "last_math" | "last_number")."""
    number = last_match(_NUMBER.finditer(tail))
    span = last_match(MATH_SPAN.finditer(tail))
    # A span deep inside a long sentence is reasoning; only a span near the end counts.
    last_is_span = span is not None and (number is None or span.end() >= number.end() - 1)
    if span is not None and last_is_span and len(tail) - span.end() <= 40:
        spans = list(MATH_SPAN.finditer(tail))
        first = len(spans) - 1
        while first > 0 and len(spans) - first < 16:
            gap = tail[spans[first - 1].end() : spans[first].start()]
            if not gap.strip() or len(gap) > 12 or _SPAN_JOIN.fullmatch(gap) is None:
                break
            first -= 1
        if _is_condition(tail, spans[first].start(), span_text(spans[first])):
            before = _same_sentence(tail, spans[first].start())
            earlier = last_value(before) if before.strip() else None
            if earlier is not None:
                return earlier
        return span_run(tail, spans, len(spans) - 1, forward=False), "last_math"
    if number is None:
        return None
    # The last sentence that holds a number states the answer; a later number in it that
    # only says when or where ("... dans 3 mois", "... in 2 days") does not, and neither
    # does a closing remark about the work ("This took 4 steps to check.").
    starts = [0, *(m.end() for m in _SENTENCE_BREAK.finditer(tail))]
    sentences = [tail[start:end] for start, end in zip(starts, [*starts[1:], len(tail)], strict=True)]
    with_values = [s for s in sentences[-6:] if _NUMBER.search(s) or MATH_SPAN.search(s)]
    answers = [s for s in with_values if _META.search(s) is None] or with_values
    bare = _bare_latex(answers[-1]) if answers else None
    if bare is not None:
        return bare, "last_math"
    offered = _offered(answers[-1]) if answers else None
    if offered is not None:
        return offered, "last_number"
    picked = _pick_number(answers[-1]) if answers else None
    return (picked if picked is not None else number.group(0)), "last_number"


_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]+")


def _offered(sentence: str) -> str | None:
    """ "It could be 5, 7, or 9, depending on the case." -> "5, 7, 9": the values a hedge offers.

    As a list it is right only against that list, never against one of its values.
    """
    if not hedged(sentence):
        return None
    offered = list(dict.fromkeys(m.group(0).strip() for m in _NUMBER.finditer(sentence)))
    return ", ".join(offered) if len(offered) >= 2 else None


def _bare_latex(sentence: str) -> str | None:
    """ "Therefore the value is 6\\sqrt{3}." -> "6\\sqrt{3}": LaTeX written without delimiters.

    Only after the sentence's last copula, and only when what follows is math alone (the
    numbers inside `\\sqrt{3}` or `\\frac{\\pi}{6}` are not the answer).
    """
    if _LATEX_COMMAND.search(sentence) is None or MATH_SPAN.search(sentence) is not None:
        return None
    copula = last_match(_COPULA.finditer(sentence))
    if copula is None:
        return None
    rest = sentence[copula.end() :].strip().rstrip(".!?;,").strip()
    if not rest or len(rest) > 80 or _LATEX_COMMAND.search(rest) is None or PROSE_WORD.search(rest):
        return None
    return rest


_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUES = {w: v for v, w in enumerate(_UNITS)} | {w: 10 + v for v, w in enumerate(_TEENS)}
_TENS_VALUES = {w: 20 + 10 * v for v, w in enumerate(_TENS)}
# "three solutions", "twenty-five apples"; "one of them" is a pronoun, not a count.
_NUMBER_WORD = re.compile(
    r"(?<![\\\w-])(?:(?P<tens>" + "|".join(_TENS) + r")(?:[- ](?P<unit>" + "|".join(_UNITS[1:]) + r"))?"
    r"|(?P<small>" + "|".join(_TEENS + _UNITS) + r"))(?![\w-])"
    # "one of them" (a pronoun), "two hundred", "one half" (not the count itself).
    r"(?!\s+(?:of|hundred|thousand|million|billion|half|halves|thirds?|quarters?|fourths?|fifths?"
    r"|sixths?|sevenths?|eighths?|ninths?|tenths?|point|and\s+a\s+half)\b)",
    re.I,
)


def number_word(tail: str) -> str | None:
    """The count a closing sentence states in words ("There are three solutions." -> "3").

    Only for text without any written number; English words up to ninety-nine, the last
    one in the last sentence that has one.
    """
    starts = [0, *(m.end() for m in _SENTENCE_BREAK.finditer(tail))]
    for start, end in reversed(list(zip(starts, [*starts[1:], len(tail)], strict=True))[-6:]):
        found = last_match(_NUMBER_WORD.finditer(tail, start, end))
        if found is None:
            continue
        if hedged(tail[start:end]) and len(_NUMBER_WORD.findall(tail, start, end)) > 1:
            return None  # "no solutions, one solution, or two solutions": several counts offered
        if found.group("small"):
            return str(_WORD_VALUES[found.group("small").lower()])
        value = _TENS_VALUES[found.group("tens").lower()]
        unit = found.group("unit")
        return str(value + (_WORD_VALUES[unit.lower()] if unit else 0))
    return None


_ARTICLE = re.compile(r"^(?:a|an|the|le|la|les|un|une|el|los|las|der|die|das|ein|eine)\s+", re.I)


def closing_words(tail: str) -> str | None:
    """The words the last sentence states after its copula: "... will be a Monday." -> "Monday".

    For word references only (a day, a name, "odd"): a number in the sentence does not
    stop it ("Counting forward 100 days, the day will be a Monday.").
    """
    starts = [0, *(m.end() for m in _SENTENCE_BREAK.finditer(tail))]
    for start, end in reversed(list(zip(starts, [*starts[1:], len(tail)], strict=True))[-3:]):
        sentence = tail[start:end].strip()
        if not sentence:
            continue
        masked = MATH_SPAN.sub(lambda m: "#" * len(m.group(0)), sentence)
        copula = last_match(_COPULA.finditer(masked))
        if copula is None or copula.group(0).strip() in ("=", ""):
            return None
        rest = _ARTICLE.sub("", sentence[copula.end() :].strip().rstrip(".!?。").strip())
        if not rest or re.search(r"[\d$\\=]", rest) or len(rest.split()) > 3:
            return None
        return None if rest.lower().startswith(("not", "no ")) else rest
    return None


_YES_NO = re.compile(r"^\W{0,4}(yes|no|oui|non|sí|si|ja|nein|是|否)(?![\w])", re.I)


_YES_NO_WORD = re.compile(r"(?<![\w])(yes|no|oui|non|sí|si|ja|nein|是|否)(?![\w])", re.I)
_YES_WORDS = {"yes", "oui", "sí", "si", "ja", "是"}


def leading_yes_no(tail: str) -> str | None:
    """ "Yes, it is possible." -> "yes": the verdict word that opens one of the last sentences."""
    starts = [0, *(m.end() for m in _SENTENCE_BREAK.finditer(tail))]
    for start, end in reversed(list(zip(starts, [*starts[1:], len(tail)], strict=True))[-3:]):
        sentence = tail[start:end].strip()
        found = _YES_NO.match(sentence)
        if found is not None:
            if len({w.lower() in _YES_WORDS for w in _YES_NO_WORD.findall(sentence)}) > 1:
                return None  # "Yes or no, depending on n.": both offered, neither stated
            return found.group(1)
    return None


# Words that offer alternatives instead of stating one answer.
HEDGE = re.compile(
    r"\b(?:either|or|depending|depends|whether|might|may|could|possibly|perhaps|maybe|otherwise|unless"
    r"|ou|o|oder|或|或者)\b",
    re.I,
)


_TEXT_COMMAND = re.compile(r"\\(?:text|mbox|textrm|mathrm)\s*\{[^{}]*\}")


def hedged(sentence: str) -> bool:
    """Whether a sentence offers alternatives in its words (`$x<1 \\text{ or } x>7$` does not)."""
    return HEDGE.search(_TEXT_COMMAND.sub(" ", MATH_SPAN.sub(" ", sentence))) is not None


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def states_phrase(tail: str, phrase: str) -> bool:
    """Whether the last sentence says `phrase` ("infinitely many", "no solution") in its words.

    "There are infinitely many solutions." and "The equation has no real solutions." state
    them (plurals, and one word between, allowed); "not infinitely many" does not.
    """
    wanted = [_stem(w) for w in re.findall(r"[a-z]+", phrase.lower())]
    if not 2 <= len(wanted) <= 4:
        return False
    starts = [0, *(m.end() for m in _SENTENCE_BREAK.finditer(tail))]
    sentence = next(
        (
            tail[a:b]
            for a, b in reversed(list(zip(starts, [*starts[1:], len(tail)], strict=True)))
            if tail[a:b].strip()
        ),
        "",
    )
    if hedged(sentence) or sentence.count(",") >= 2:
        # "either no solutions or infinitely many", "4, 5, x^2, yes, no solution": several
        # answers offered, none stated.
        return False  # "either no solutions or infinitely many": several answers, none stated
    words = [_stem(w) for w in re.findall(r"[a-z]+", sentence.lower())[:200]]
    for start, word in enumerate(words):
        if word != wanted[0] or (start and words[start - 1] in ("not", "no", "never")):
            continue
        position, matched = start, 1
        while matched < len(wanted):
            nxt = [k for k in (position + 1, position + 2) if k < len(words) and words[k] == wanted[matched]]
            if not nxt:
                break
            position, matched = nxt[0], matched + 1
        if matched == len(wanted):
            return True
    return False
