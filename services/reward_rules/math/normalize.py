"""String canonicalisation of an extracted answer, before it is parsed.

Everything here is pure and linear in the input: it turns the many ways a person or a
model writes the same answer (`\\dfrac`, `\\left(`, `1{,}000`, `5\\text{ cm}`, `30^\\circ`)
into one LaTeX dialect that `parse.py` understands, so the parser stays small.
"""

from __future__ import annotations

import re
import unicodedata

from services.reward_rules.math.nodes import FUNCTION_NAMES

__all__ = ["canonical_key", "clean_answer", "strip_math_delimiters", "text_key"]

_DELIMS = re.compile(r"^\s*(?:\$\$|\$|\\\[|\\\()\s*(.*?)\s*(?:\$\$|\$|\\\]|\\\))\s*$", re.S)
_SPACING = re.compile(
    r"(?<!\\)\\(?:displaystyle|textstyle|scriptstyle|limits|nolimits|quad|qquad|[,;:! >]|hfill)"
    r"|\\(?:h|v)space\*?\{[^{}]*\}|~"
)
_SIZING = re.compile(r"\\(?:left|right|middle|[bB]igg?[lrm]?)(?![a-zA-Z])\s*(\.)?")
_FRAC_VARIANTS = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
_BINOM_VARIANTS = re.compile(r"\\[dt]binom(?![a-zA-Z])")
# `{10 \\choose 3}`: the TeX primitive spelling of `\\binom{10}{3}`.
_CHOOSE = re.compile(r"\{([^{}]{1,40}?)\\choose(?![a-zA-Z])([^{}]{1,40})\}")
# `\\sin 60^\\circ`: a trigonometric function of degrees takes radians once the sign goes.
_TRIG_DEGREES = re.compile(
    r"\\(sin|cos|tan|sec|csc|cot)\s*(\(?)\s*(\d{1,4}(?:\.\d{1,6})?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°)\s*(\)?)"
)
# `\\color{red}`, `\\textcolor{red}{12}`: colour, never content.
_COLOR = re.compile(r"\\color\s*\{[^{}]{0,20}\}|\\textcolor\s*\{[^{}]{0,20}\}")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])|\\circ(?![a-zA-Z])")
_THIN_THOUSANDS = re.compile(r"(?<=\d)(?:\{,\}|\\,|\\ |\s|\\!|\\;)(?=\d{3}(?!\d))")
# `12,\!480`, `40,\! 320`, `1{,}000`: a comma with TeX spacing around it, between digit groups.
_SPACED_COMMA = re.compile(r"(?<=\d)(?:\{,\}|,)(?:\s*\\[!,; ])+\s*(?=\d{3}(?!\d))")
# A unit or currency after a number in any script: `480米`, `25 个`, `64 €`, `12 dollars`.
_TRAILING_UNIT = re.compile(
    r"^(?P<head>[-+]?[\d.,]*\d)\s*(?P<unit>(?:[^\W\d_]|[€£¥₹₩₽¢$])[^\d=<>+*/^()\[\]{}\\]{0,24})$"
)
_LEADING_CURRENCY = re.compile(r"^(?:[€£¥₹₩₽$]|US\$|USD|EUR|RMB|Rs\.?)\s*(?=[-+]?\d)")
# `\\frac` written with doubled backslashes (a JSON string escaped twice).
_DOUBLE_ESCAPED = re.compile(r"\\\\(?=[a-zA-Z{}])")
# "∴ x = 18", "\\Rightarrow x = 18": a conclusion marker before the answer.
_LEADING_ARROW = re.compile(
    r"^(?:[∴⇒→⟹≈]|=>|=(?![=>])|\\approx(?![a-zA-Z])|\\(?:therefore|Rightarrow|implies|Longrightarrow|to)(?![a-zA-Z]))\s*"
)
# "3 (three)", "12 (in total)": words in parentheses after an answer are an aside.
_TRAILING_ASIDE = re.compile(r"^(.*?\S)\s+\((?:[a-zA-Z]{3,}\s*){1,4}\)$")
# Set-builder notation: `\\{x \\mid 1 \\le x < 4\\}` is the condition `1 \\le x < 4`.
_SET_BUILDER = re.compile(
    r"^\\\{\s*[a-zA-Z](?:\s*\\in\s*\\mathbb\s*\{?\s*R\s*\}?)?\s*(?:\\mid|\\vert|\||:)\s*(?P<cond>.+?)\s*\\\}$"
)
# Unicode a model may write for TeX: vulgar fractions, superscripts, ℝ, fullwidth digits (NFKC).
_VULGAR = {
    char: f"\\frac{{{numerator}}}{{{denominator}}}"
    for char, numerator, denominator in (
        ("½", 1, 2),
        ("⅓", 1, 3),
        ("⅔", 2, 3),
        ("¼", 1, 4),
        ("¾", 3, 4),
        ("⅕", 1, 5),
        ("⅙", 1, 6),
        ("⅛", 1, 8),
        ("⅜", 3, 8),
        ("⅝", 5, 8),
    )
}
_SUPERSCRIPTS = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+")
_SUPER_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
# The real line in words or blackboard bold: `\\mathbb{R}`, `ℝ`, "all real numbers".
_REALS = re.compile(
    r"^(?:x\s*\\in\s*)?(?:\\mathbb\s*\{?\s*R\s*\}?|ℝ|(?:\\text\{\s*)?all\s+real(?:\s+numbers)?\s*\}?)$", re.I
)
# Past this length an "answer" is runaway output: only cheap, linear clean-up is applied.
_MAX_CLEAN_CHARS = 2000
_COMMA_THOUSANDS = re.compile(r"^(?:[a-zA-Z]\w*\s*=\s*)?[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s*\\?%)?$")
_SPACE_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
_TEXT_CMD = re.compile(
    r"\\(?:text(?:rm|bf|it|sf|tt|normal)?|mathrm|mathbf|mathit|mathsf|mathtt|mathbb|mbox|operatorname|boldsymbol|bm)\s*\{"
)
_TRAILING_TEXT = re.compile(
    r"(?P<head>.*?[\d}a-zA-Z)\]|.])\s*\\(?:text(?:rm|bf|it|normal)?|mathrm|mbox)\s*\{\s*(?P<word>[^{}]*)\}"
    r"\s*(?:\^\s*\{?\s*\d\s*\}?)?\s*$",
    re.S,
)
_MIXED_TEXT = re.compile(r"^([-+]?\d+)\s+(\d+)\s*/\s*(\d+)$")
_FRAC_SHORT = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_SHORT_A = re.compile(r"\\frac\s*(\d)\s*\{")
_FRAC_SHORT_B = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)")
_SQRT_SHORT = re.compile(r"\\sqrt\s*(\d)")
_AND_OR = re.compile(r"\s*(?:,\s*)?\\text\{\s*(?:and|or)\s*\}\s*|\s+(?:and|or)\s+")
_TRAILING_PUNCT = re.compile(r"(?:[\s.,;:?]|\\\.|\\;)+$")
_LEADING_WORDS = re.compile(
    r"^(?:the\s+)?(?:final\s+)?(?:answer|result|value|solution)s?\s*(?:is|are|=|:)\s*", re.I
)
_UNIT_WORDS = frozenset(
    [
        "cm",
        "mm",
        "km",
        "m",
        "meter",
        "meters",
        "metre",
        "metres",
        "kilometer",
        "kilometers",
        "centimeter",
        "centimeters",
        "inch",
        "inches",
        "in",
        "ft",
        "feet",
        "foot",
        "yard",
        "yards",
        "yd",
        "mile",
        "miles",
        "mi",
        "sq",
        "square",
        "cubic",
        "units",
        "unit",
        "unit2",
        "g",
        "kg",
        "gram",
        "grams",
        "kilogram",
        "kilograms",
        "mg",
        "lb",
        "lbs",
        "pound",
        "pounds",
        "oz",
        "ounce",
        "ounces",
        "l",
        "ml",
        "liter",
        "liters",
        "litre",
        "litres",
        "gallon",
        "gallons",
        "s",
        "sec",
        "secs",
        "second",
        "seconds",
        "min",
        "mins",
        "minute",
        "minutes",
        "h",
        "hr",
        "hrs",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "yr",
        "yrs",
        "dollar",
        "dollars",
        "cent",
        "cents",
        "euro",
        "euros",
        "rupee",
        "rupees",
        "rs",
        "people",
        "person",
        "persons",
        "students",
        "student",
        "apples",
        "apple",
        "marbles",
        "books",
        "ways",
        "degrees",
        "degree",
        "deg",
        "times",
        "mph",
        "kmh",
        "kph",
        "per",
        "percent",
        "points",
        "point",
        "items",
        "item",
        "children",
        "cars",
        "boxes",
        "eggs",
        "pages",
        "tickets",
        "cookies",
        "candies",
        "coins",
        "miles/hour",
        "km/h",
        "m/s",
    ]
)
_MATH_WORDS = FUNCTION_NAMES | {"sqrt", "pi", "e", "i", "inf", "infty"}


_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\{(\d+)\}")
# `0.\\bar{3}`, `0.1\\dot{6}`, `0.\\overline 3`: other spellings of the repeated period.
_BAR_PERIOD = re.compile(r"(?<=[\d.])\\(?:bar|dot|overline)\s*(?:\{(\d+)\}|(\d))")
# `0.333\\ldots`, `0.1666...`, `0.142857142857\\cdots`: a period written out, then dots.
_DOTTED = re.compile(r"(?<![\d.])(\d*)\.(\d{2,40})\s*(?:\\[lc]?dots(?![a-zA-Z])|\.\.\.|…)")


def _repeating(match: re.Match[str]) -> str:
    """`0.1\\overline{6}` -> `\\frac{15}{90}`: a repeating decimal is an exact rational."""
    whole, fixed, period = match.group(1) or "0", match.group(2), match.group(3)
    numerator = int(whole + fixed + period) - int(whole + fixed)
    denominator = 10 ** len(fixed) * (10 ** len(period) - 1)
    return f"\\frac{{{numerator}}}{{{denominator}}}"


def _trig_degrees(match: re.Match[str]) -> str:
    fn, opened, value, closed = match.groups()
    if bool(opened) != bool(closed):
        return match.group(0)
    return f"\\{fn}(\\frac{{{value}\\pi}}{{180}})"


def _dotted(match: re.Match[str]) -> str:
    """`0.1666...` -> `0.1\\overline{6}`: the shortest block that ends the digits twice.

    Digits that do not end in a repeated block (`3.14...`) are left as written.
    """
    whole, digits = match.group(1), match.group(2)
    for size in range(1, len(digits) // 2 + 1):
        block = digits[-size:]
        if digits[-2 * size : -size] != block:
            continue
        fixed = digits
        while fixed.endswith(block):
            fixed = fixed[:-size]
        return f"{whole}.{fixed}\\overline{{{block}}}"
    return match.group(0)


def strip_math_delimiters(text: str) -> str:
    """`$x$`, `$$x$$`, `\\(x\\)`, `\\[x\\]` -> `x` (repeatedly; models nest them)."""
    previous = None
    while previous != text:
        previous = text
        match = _DELIMS.match(text)
        if match:
            text = match.group(1)
    return text.replace("$", "").strip()


def _unwrap_text_commands(text: str) -> str:
    """`\\text{abc}` -> `abc`, keeping nested braces balanced (no regex recursion)."""
    out: list[str] = []
    pos = 0
    for match in _TEXT_CMD.finditer(text):
        if match.start() < pos:
            continue
        depth = 1
        j = match.end()
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        if depth:
            break
        inner = text[match.end() : j - 1]
        out.append(text[pos : match.start()])
        command = match.group(0)
        if "mathbb" in command:
            out.append(inner)
        else:
            # A spaced word keeps its spaces so "\text{ and }" stays a separator.
            out.append(
                " " + inner.strip() + " " if inner.strip().isalpha() and len(inner.strip()) > 1 else inner
            )
        pos = j
    out.append(text[pos:])
    return "".join(out)


_SPLIT_UNIT = re.compile(
    r"\\(?:text|mathrm|mbox)\s*\{\s*([A-Za-z]{1,12})\s*\}\s*/\s*\\(?:text|mathrm|mbox)\s*\{\s*([A-Za-z]{1,12})\s*\}"
)
_UNIT_SLASH = re.compile(r"(?<=[A-Za-z]) *\/ *(?=[A-Za-z])")


def _strip_units(text: str) -> str:
    """`5\\text{ cm}^2` and `12 apples` -> `5`, `12`; a lone word stays (it may be the answer)."""
    if "/" in text:
        # `\\mathrm{km}/\\mathrm{h}` and `km / h` are the unit `km/h`.
        text = _UNIT_SLASH.sub("/", _SPLIT_UNIT.sub(r"\\text{\1/\2}", text))
    for _ in range(3):
        match = _TRAILING_TEXT.match(text)
        if not match or not match.group("head").strip():
            break
        word = match.group("word").strip()
        if word and not re.fullmatch(r"[A-Za-z][A-Za-z .'/^0-9-]*", word):
            break
        if word and word.lower() not in _UNIT_WORDS and (len(word) < 2 or word.lower() in _MATH_WORDS):
            break
        text = match.group("head").strip()
    words = text.split()
    if len(words) >= 2 and re.search(r"\d", words[0]):
        tail = words[1:]
        if all(w.lower().strip(".") in _UNIT_WORDS for w in tail):
            return words[0]
        if all(w.isalpha() and w.lower() not in _MATH_WORDS and len(w) > 2 for w in tail) and len(tail) <= 3:
            return words[0]
    return text


_SMALL_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen",
    "sixteen seventeen eighteen nineteen twenty",
)
_NUMBER_WORDS = {word: str(value) for value, word in enumerate(" ".join(_SMALL_NUMBERS).split(" "))} | {
    word: str(10 * tens)
    for tens, word in enumerate(("thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), start=3)
}


def _unicode_math(text: str) -> str:
    """`½` -> `\\frac{1}{2}`, `x²` -> `x^{2}`, `３` -> `3`, before anything reads the text."""
    if text.isascii():
        return text
    text = "".join(_VULGAR.get(char, char) for char in text)
    text = _SUPERSCRIPTS.sub(lambda m: "^{" + m.group(0).translate(_SUPER_DIGITS) + "}", text)
    return unicodedata.normalize("NFKC", text)


def _is_unit(tail: str) -> bool:
    """A unit or counter word after a number, not a variable (`5 x` is 5x, `2 pi` is 2π)."""
    first = tail.strip().split(" ")[0].lower().strip(".")
    if first in _MATH_WORDS or any("\u0370" <= char <= "\u03ff" or char in "√∞" for char in first):
        return False  # `2π`, `3√2`: math, not a unit
    if not first.isascii():
        return True  # 米, 个, €, km/h in another script
    return first in _UNIT_WORDS or (len(first) >= 3 and first.isalpha())


def clean_answer(text: str) -> str:
    """The canonical LaTeX of one answer: what the parser and the string comparison see."""
    text = text.strip()
    if not text or len(text) > _MAX_CLEAN_CHARS:
        return text
    text = _unicode_math(text)
    if _REALS.match(strip_math_delimiters(text)):
        return "(-\\infty, \\infty)"
    if "\\\\" in text and "\\begin" not in text:
        text = _DOUBLE_ESCAPED.sub(r"\\", text)
    text = _LEADING_WORDS.sub("", _LEADING_ARROW.sub("", text))
    text = text.replace("\\$", "").replace("\\%", "%")
    text = strip_math_delimiters(text)
    text = text.replace("−", "-").replace("–", "-").replace("\u2009", " ").replace("\u00a0", " ")
    builder = _SET_BUILDER.match(text)
    if builder:
        text = builder.group("cond")
    text = _SPACED_COMMA.sub(",", text)
    text = _THIN_THOUSANDS.sub("", text) if re.search(r"\d(?:\{,\}|\\,|\\ |\\!|\\;)\d{3}", text) else text
    text = text.replace("{,}", ",")
    text = _FRAC_VARIANTS.sub(r"\\frac", text)
    text = _BINOM_VARIANTS.sub(r"\\binom", text)
    if "\\choose" in text:
        text = _CHOOSE.sub(lambda m: f"\\binom{{{m.group(1).strip()}}}{{{m.group(2).strip()}}}", text)
    if "\\color" in text or "\\textcolor" in text:
        text = _COLOR.sub("", text)
    if "circ" in text or "°" in text:
        text = _TRIG_DEGREES.sub(_trig_degrees, text)
    text = _DEGREES.sub("", text)
    if "\\bar" in text or "\\dot" in text or "\\overline" in text:
        text = _BAR_PERIOD.sub(lambda m: f"\\overline{{{m.group(1) or m.group(2)}}}", text)
    if "dots" in text or "..." in text or "…" in text:
        text = _DOTTED.sub(_dotted, text)
    text = _REPEATING.sub(_repeating, text)
    text = _SPACING.sub(" ", text)
    text = _strip_units(text)
    text = _AND_OR.sub(",", text)
    text = _unwrap_text_commands(text)
    text = _LEADING_WORDS.sub("", _TRAILING_ASIDE.sub(r"\1", text.strip()))
    text = _SIZING.sub("", text)
    text = _SPACING.sub(" ", text)
    text = _FRAC_SHORT.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_SHORT_A.sub(r"\\frac{\1}{", text)
    text = _FRAC_SHORT_B.sub(r"\\frac\1{\2}", text)
    text = _SQRT_SHORT.sub(r"\\sqrt{\1}", text)
    text = text.replace("\\infin", "\\infty").replace("\\infinity", "\\infty")
    text = re.sub(r"(?<![a-zA-Z\\])(?:infinity|inf)(?![a-zA-Z])", r"\\infty", text)
    text = _TRAILING_PUNCT.sub("", text.strip())
    text = _LEADING_CURRENCY.sub("", text.strip())
    unit = _TRAILING_UNIT.match(text)
    if unit and _is_unit(unit.group("unit")):
        text = unit.group("head")
    text = _NUMBER_WORDS.get(text.lower(), text).strip()
    fraction = _FRACTION_WORDS.match(text)
    if fraction is not None:  # "one half", "two-thirds", "three quarters"
        numerator = 1 if fraction.group(1).lower() == "a" else int(_NUMBER_WORDS[fraction.group(1).lower()])
        text = f"\\frac{{{numerator}}}{{{_DENOMINATORS[fraction.group(2).lower().rstrip('s')]}}}"
    if _COMMA_THOUSANDS.match(text):
        text = text.replace(",", "")
    elif _SPACE_THOUSANDS.match(text):
        text = text.replace(" ", "")
    mixed = _MIXED_TEXT.match(text)
    if mixed:
        whole, num, den = mixed.groups()
        text = f"{whole}\\frac{{{num}}}{{{den}}}"
    text = re.sub(r"\s+", " ", text)
    return text.strip()


_DENOMINATORS = {
    "half": 2,
    "halve": 2,
    "third": 3,
    "quarter": 4,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_FRACTION_WORDS = re.compile(
    r"^(a|one|two|three|four|five|six|seven|eight|nine)[\s-]+"
    r"(halves|half|thirds?|quarters?|fourths?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?)$",
    re.I,
)


def canonical_key(text: str) -> str:
    """A whitespace-free key: two answers with the same key are the same answer.

    Space between two digits stays (one space): `2 04` is not `204` (thousands groups
    were joined before, in clean_answer).
    """
    if not _DIGIT_SPACE_DIGIT.search(text):
        return re.sub(r"\s+", "", text)
    return _WHITESPACE.sub(
        lambda m: " " if _DIGIT_SPACE_DIGIT.fullmatch(text, m.start() - 1, m.end() + 1) else "", text
    )


_WHITESPACE = re.compile(r"\s+")
_DIGIT_SPACE_DIGIT = re.compile(r"\d\s+\d")


def text_key(text: str) -> str:
    """A key for word answers (`\\text{Monday}` vs `monday.`): case and punctuation free."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())
