"""A generator of responses written the way models write them, labels known.

    .venv/bin/python -m tests.reward_rules.math_gen.real_style [--seed 0] [--count N]

Templates x values x styles, each positive beside its negative: multiple choice with the
options in the prompt (letters in every style models use, the option's text instead of
its letter, letters named while analysing options, "none of the choices"), PRM800K's
`# Answer` blocks, closing sentences that state the answer first, signs before math
delimiters, long chain-of-thought with intermediate candidates and corrections,
responses cut off before committing to an answer, tool outputs, and hedges (several
different final answers against a single-valued reference).

Not a copy of any corpus: every text here is built from the templates below, so the
held-out acceptance corpus of real outputs stays held out. Pure and deterministic.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

__all__ = ["RealCase", "generate"]

LETTERS = "ABCDE"


@dataclass(frozen=True)
class RealCase:
    id: str
    category: str
    prompt: str
    reference: str
    response: str
    expected: bool

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


# -- values ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Value:
    """A reference, forms of it a response may write, and a nearby wrong value."""

    reference: str
    forms: tuple[str, ...]
    wrong: str


def _value(rng: random.Random) -> Value:
    kind = rng.randrange(9)
    if kind == 0:
        n = rng.randint(2, 999)
        return Value(str(n), (str(n), f"{n}.0" if n < 100 else f"{n:,}"), str(n + rng.choice([-2, -1, 1, 3])))
    if kind == 1:
        p, q = rng.choice([(1, 2), (2, 3), (3, 4), (5, 6), (3, 8), (7, 12), (4, 9)])
        return Value(
            f"\\frac{{{p}}}{{{q}}}",
            (f"\\frac{{{p}}}{{{q}}}", f"{p}/{q}", f"\\dfrac{p}{q}"),
            f"\\frac{{{q}}}{{{p}}}",
        )
    if kind == 2:
        k = rng.randint(2, 9)
        return Value(f"{k}\\pi", (f"{k}\\pi", f"\\pi \\cdot {k}"), f"{k + 1}\\pi")
    if kind == 3:
        a, b = rng.randint(-30, 30), rng.randint(-30, 30)
        return Value(
            f"({a}, {b})", (f"({a}, {b})", f"({a},{b})"), f"({b}, {a})" if a != b else f"({a}, {b + 1})"
        )
    if kind == 4:
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        return Value(f"{a}+{b}i", (f"{a}+{b}i", f"{b}i+{a}"), f"{a}-{b}i")
    if kind == 5:
        a, b = sorted(rng.sample(range(-9, 10), 2))
        return Value(f"[{a}, {b}]", (f"[{a}, {b}]", f"[{a},{b}]"), f"({a}, {b})")
    if kind == 6:
        k = rng.randint(2, 9)
        return Value(f"{k}\\sqrt{{2}}", (f"{k}\\sqrt{{2}}", f"\\sqrt{{{2 * k * k}}}"), f"{k}\\sqrt{{3}}")
    if kind == 7:
        k = rng.randint(2, 9)
        return Value(f"{k}k", (f"{k}k", f"{k} k"), f"{k + 1}k")
    n = rng.randint(1, 60)
    return Value(f"-{n}", (f"-{n}",), str(n))


def _integer(rng: random.Random) -> Value:
    n = rng.randint(3, 400)
    return Value(str(n), (str(n),), str(n + rng.choice([-3, -1, 1, 2, 10])))


# -- reasoning filler ------------------------------------------------------------------------------
_STEPS = [
    "First, note that ${a} + {b} = {c}$.",
    "Multiplying both sides by {a} gives {d}.",
    "So far we have {c} of them, but we still need the rest.",
    "Let me check: {a} times {b} is {d}.",
    "Subtracting, we get ${c} - {a} = {e}$.",
    "This means there are {b} cases to consider.",
    "Hmm, {e} does not look right; let me recompute.",
    "The sum of the first {a} terms is {d}.",
]


def _reasoning(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        step = rng.choice(_STEPS)
        out.append(
            step.replace("{a}", str(a))
            .replace("{b}", str(b))
            .replace("{c}", str(a + b))
            .replace("{d}", str(a * b))
            .replace("{e}", str(b))
        )
    return " ".join(out)


def _math(form: str, rng: random.Random) -> str:
    return form if form.lstrip("-").isdigit() and rng.random() < 0.5 else f"${form}$"


# -- 1. multiple choice ----------------------------------------------------------------------------
_OPTION_LAYOUTS: list[Callable[[list[str]], str]] = [
    lambda opts: "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(opts)),
    lambda opts: "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(opts)),
    lambda opts: " ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(opts)),
    lambda opts: "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(opts)),
    lambda opts: "\n".join(f"{LETTERS[i]}: {o}" for i, o in enumerate(opts)),
]

_LETTER_STYLES = [
    "Solution: Choice_{L}",
    "Choice_{L}",
    "Answer: ({L})",
    "Answer: {L}",
    "The correct option is {L}.",
    "Therefore, the correct answer is option {L}.",
    "**{L}**",
    "So the answer is $\\boxed{{L}}$.",
    "The answer is ({L}) {T}.",
    "Final answer: {L}. {T}",
    "I choose {L}.",
    "The answer is {L}: {T}",
    "Thus, the right choice is ({L}).",
    "**Answer: {L}**",
]

_TEXT_STYLES = [
    "So the answer is $\\boxed{{T}}$.",
    "The answer is {T}.",
    "Therefore the value is {T}.",
]

_ANALYSIS = [
    "Option {L}: {T} - too far off.",
    "Step {n}: {L}. {T} is not correct.",
    "{L} cannot be right, since {T} is too small.",
    "Checking ({L}) {T}: this fails the second condition.",
]


def _mc_options(rng: random.Random) -> tuple[list[str], list[str]]:
    """(option texts as the prompt writes them, the same values as a response may write them)."""
    kind = rng.randrange(4)
    if kind == 0:
        base = rng.randint(5, 90)
        values = rng.sample(range(base, base + 40), 4)
        texts = [f"{v} days" if rng.random() < 0.5 else str(v) for v in values]
        return texts, [str(v) for v in values]
    if kind == 1:
        dens = rng.sample([2, 3, 4, 5, 6, 8, 12], 4)
        texts = [f"$\\frac{{\\pi}}{{{d}}}$" for d in dens]
        return texts, [f"\\frac{{\\pi}}{{{d}}}" for d in dens]
    if kind == 2:
        ks = rng.sample(range(2, 12), 4)
        texts = [f"${k}\\sqrt{{3}}$" for k in ks]
        return texts, [f"{k}\\sqrt{{3}}" for k in ks]
    ps = rng.sample([(1, 2), (1, 3), (2, 3), (3, 4), (1, 4), (5, 6), (2, 5)], 4)
    return [f"$\\frac{{{p}}}{{{q}}}$" for p, q in ps], [f"\\frac{{{p}}}{{{q}}}" for p, q in ps]


def _multiple_choice(rng: random.Random, index: int) -> Iterator[RealCase]:
    texts, written = _mc_options(rng)
    prompt = f"Which of the following is the value asked for? ({index})\n" + rng.choice(_OPTION_LAYOUTS)(
        texts
    )
    right = rng.randrange(4)
    wrong = rng.choice([i for i in range(4) if i != right])
    ref_style = rng.randrange(3)
    reference = (
        LETTERS[right]
        if ref_style == 0
        else f"({LETTERS[right]}) {texts[right]}"
        if ref_style == 1
        else texts[right].strip("$")
    )
    analysis = " ".join(
        rng.choice(_ANALYSIS)
        .replace("{L}", LETTERS[i])
        .replace("{T}", texts[i])
        .replace("{n}", str(rng.randint(2, 9)))
        for i in rng.sample(range(4), 2)
        if i != right
    )
    intro = _reasoning(rng, rng.randint(1, 4))
    for chosen, expected in ((right, True), (wrong, False)):
        style = rng.choice(_LETTER_STYLES)
        ending = style.replace("{L}", LETTERS[chosen]).replace("{T}", texts[chosen])
        yield RealCase("", "mc_letter", prompt, reference, f"{intro} {analysis}\n\n{ending}", expected)
        tstyle = rng.choice(_TEXT_STYLES)
        ending = tstyle.replace("{T}", written[chosen])
        yield RealCase("", "mc_text", prompt, reference, f"{intro}\n\n{ending}", expected)
    # Several letters at the end, none stated, or none of them.
    hedge = rng.choice(
        [
            "The answer is {A} or {B}.",
            "Either ({A}) or ({B}) could be right.",
            "$\\boxed{{A}}$ or $\\boxed{{B}}$",
        ]
    )
    hedged = hedge.replace("{A}", LETTERS[right]).replace("{B}", LETTERS[wrong])
    yield RealCase("", "mc_hedge", prompt, reference, f"{intro}\n\n{hedged}", False)
    yield RealCase(
        "",
        "mc_none",
        prompt,
        reference,
        f"{intro} {analysis}\n\n"
        + rng.choice(["None of the choices is correct.", "None of the options match my result of 17."]),
        False,
    )
    yield RealCase("", "mc_no_letter", prompt, reference, f"{intro} {analysis}", False)


# -- 2. answer blocks ------------------------------------------------------------------------------
def _answer_block(rng: random.Random, index: int) -> Iterator[RealCase]:
    value = _value(rng)
    body = "\n".join(_reasoning(rng, 2) for _ in range(rng.randint(2, 5)))
    closing = rng.choice(["", "I conclude that my answer is correct.\n\n", "This checks out.\n\n"])
    for form, expected in ((rng.choice(value.forms), True), (value.wrong, False)):
        style = rng.randrange(3)
        if style == 0:
            response = f"{body}\n{closing}# Answer\n\n{form}"
        elif style == 1:
            response = f"{body}\nThe answer is: {form}"
        else:
            response = f"{body}\n{closing}# Answer\n\n{form}\n"
        # The right value in the reasoning of a wrong answer must not pay it.
        if not expected:
            response = response.replace(body, body + f"\nAt one point I thought it was {value.forms[0]}.")
        yield RealCase("", "answer_block", f"Problem {index}.", value.reference, response, expected)


# -- 3. closing sentence that states the answer first ----------------------------------------------
_SUBJECTS = [
    ("cars drove through the traffic jam in the first {m} minutes", "cars"),
    ("people think that horse #{m} will win", "people"),
    ("apples are left after {m} days", "apples"),
    ("students passed the test in room {m}", "students"),
    ("pages remain to be read by day {m}", "pages"),
]


def _closing_sentence(rng: random.Random, index: int) -> Iterator[RealCase]:
    value = _integer(rng)
    template, _ = rng.choice(_SUBJECTS)
    m = rng.randint(2, 40)
    body = _reasoning(rng, rng.randint(3, 8))
    for number, expected in ((value.reference, True), (value.wrong, False)):
        sentence = f"{number} " + template.replace("{m}", str(m)) + "."
        lead = rng.choice(["", "Therefore, ", "So "])
        if lead:
            sentence = lead + sentence
        yield RealCase(
            "", "closing_sentence", f"Word problem {index}.", value.reference, f"{body}\n{sentence}", expected
        )


# -- 4. signs and delimiters -----------------------------------------------------------------------
def _signs(rng: random.Random, index: int) -> Iterator[RealCase]:
    inner = rng.choice(["\\pi/6", "\\frac{\\pi}{3}", "5", "\\sqrt{2}", "\\frac{3}{4}", "2\\pi"])
    reference = f"-{inner}"
    body = _reasoning(rng, rng.randint(2, 5))
    for text, expected in ((f"-${inner}$", True), (f"${inner}$", False)):
        ending = rng.choice(["The answer is {X}.", "So the angle is {X}.", "Final answer: {X}"]).replace(
            "{X}", text
        )
        yield RealCase("", "signs", f"Compute {index}.", reference, f"{body}\n{ending}", expected)


# -- 5. long chain-of-thought, and responses cut off ------------------------------------------------
def _long_cot(rng: random.Random, index: int) -> Iterator[RealCase]:
    value = _value(rng)
    size = rng.choice([5_000, 12_000, 30_000, 60_000, 100_000])
    think_tags = rng.random() < 0.5
    chunks: list[str] = []
    length = 0
    while length < size:
        piece = _reasoning(rng, 6)
        if rng.random() < 0.15:
            piece += f" So the answer might be $\\boxed{{{value.wrong}}}$."
            piece += " Wait, that's wrong; let me redo this step."
        if rng.random() < 0.1:
            piece += f" Candidate: {rng.randint(1, 999)}. Hmm, no."
        chunks.append(piece)
        length += len(piece)
    thinking = "\n\n".join(chunks)
    restate = rng.choice(["", " In words: that is the final value."])
    for form, expected in ((rng.choice(value.forms), True), (value.wrong, False)):
        inner = thinking + f"\n\nSo the answer is $\\boxed{{{form}}}$. Let me double check... yes."
        final = f"The final answer is $\\boxed{{{form}}}$.{restate}"
        response = f"<think>\n{inner}\n</think>\n\n{final}" if think_tags else f"{inner}\n\n{final}"
        yield RealCase("", "long_cot", f"Hard problem {index}.", value.reference, response, expected)
    # Cut off at the length limit, before committing to an answer (the right value appears inside).
    cut = thinking[: rng.randint(len(thinking) // 2, len(thinking))]
    cut += f" The sum is {value.forms[0]} so far, and then"
    yield RealCase(
        "",
        "truncated",
        f"Hard problem {index}.",
        value.reference,
        f"<think>\n{cut}" if think_tags else cut,
        False,
    )


# -- 6. hedging ------------------------------------------------------------------------------------
_WORD_ANSWERS = [
    "no solutions",
    "exactly one solution",
    "infinitely many solutions",
    "exactly two solutions",
    "no such number",
]


def _hedges(rng: random.Random, index: int) -> Iterator[RealCase]:
    value = _integer(rng)
    body = _reasoning(rng, rng.randint(2, 5))
    other = value.wrong
    hedges = [
        f"The answer is either {value.reference} or {other}.",
        f"So the answer is $\\boxed{{{value.reference}}}$ or $\\boxed{{{other}}}$.",
        f"Possible answers: $\\boxed{{{other}}}$, $\\boxed{{{value.reference}}}$.",
        f"It could be {other}, {value.reference}, or {int(other) + 5}, depending on the case.",
        f"$\\boxed{{{value.reference}}}$ \n\nHmm, or maybe $\\boxed{{{other}}}$.",
    ]
    hedge = rng.choice(hedges)
    yield RealCase("", "hedge", f"Problem {index}.", value.reference, f"{body}\n{hedge}", False)
    yield RealCase("", "hedge", f"Problem {index}.", other, f"{body}\n{hedge}", False)  # under either value
    yield RealCase(
        "",
        "hedge",
        f"Problem {index}.",
        value.reference,
        f"{body}\nSo the answer is $\\boxed{{{value.reference}}}$.",
        True,
    )
    words = rng.sample(_WORD_ANSWERS, 3)
    reference = rng.choice(words)
    listing = f"Depending on the case there are {words[0]}, {words[1]}, or {words[2]}."
    yield RealCase(
        "", "hedge_words", f"How many solutions ({index})?", reference, f"{body}\n{listing}", False
    )
    yield RealCase(
        "",
        "hedge_words",
        f"How many solutions ({index})?",
        reference,
        f"{body}\nIn every case, there are {reference}.",
        True,
    )
    yield RealCase(
        "",
        "hedge_words",
        f"How many solutions ({index})?",
        reference,
        f"{body}\nThe system has either {words[0]} or {words[1]}.",
        False,
    )
    # A list reference answered as that list is not a hedge.
    a, b = sorted(rng.sample(range(-9, 20), 2))
    yield RealCase(
        "",
        "list_answer",
        f"Solve ({index}).",
        f"{a}, {b}",
        f"{body}\nThe solutions are $x = {a}$ or $x = {b}$.",
        True,
    )
    yield RealCase(
        "",
        "list_answer",
        f"Solve ({index}).",
        f"{a}, {b}",
        f"{body}\nThe solutions are $x = {a}$ or $x = {b + 1}$.",
        False,
    )


# -- 7. tool outputs -------------------------------------------------------------------------------
def _tools(rng: random.Random, index: int) -> Iterator[RealCase]:
    value = _integer(rng)
    a, b = rng.randint(2, 50), rng.randint(2, 50)
    code = (
        f"```python\nfrom sympy import *\nx = symbols('x')\nprint(solve(x**2 - {a}*x - {b}, x))\n"
        f"print({value.reference})\n```"
    )
    output = f"```output\n[{a}, {b}]\n{value.reference}\n```"
    body = f"Let me compute this with Python.\n{code}\n{output}\n"
    for final, expected in ((value.reference, True), (value.wrong, False)):
        ending = rng.choice(
            ["The answer is $\\boxed{{X}}$.", "Hence the result is {X}.", "**Final Answer**: {X}"]
        )
        yield RealCase(
            "",
            "tool_output",
            f"Tool problem {index}.",
            value.reference,
            body + ending.replace("{X}", final),
            expected,
        )
    yield RealCase("", "tool_cut", f"Tool problem {index}.", value.reference, body, False)


# -- 8. equalities that are not, and equivalences that are -----------------------------------------
def _equalities(rng: random.Random, index: int) -> Iterator[RealCase]:
    h = rng.randint(1, 11)
    yield RealCase(
        "", "ratio_zero", f"Clock {index}.", f"{h + 1}:00", f"The time is $\\boxed{{{h}:00}}$.", False
    )
    yield RealCase("", "ratio_zero", f"Clock {index}.", f"{h}:00", f"The time is $\\boxed{{{h}:00}}$.", True)
    a, c = rng.randint(2, 15), rng.randint(2, 40)
    yield RealCase(
        "", "equation_side", f"Equation {index}.", f"{c} = {a}a+b", f"So $\\boxed{{{a}a+b}}$.", False
    )
    n = rng.choice("nmk")
    yield RealCase(
        "",
        "radical",
        f"Limit {index}.",
        f"\\sqrt{{1/{n}}}",
        f"The answer is $\\boxed{{\\frac{{1}}{{\\sqrt{{{n}}}}}}}$.",
        True,
    )
    yield RealCase(
        "",
        "radical",
        f"Limit {index}.",
        f"\\sqrt{{1/{n}}}",
        f"The answer is $\\boxed{{\\frac{{1}}{{{n}}}}}$.",
        False,
    )
    yield RealCase("", "abs", f"Abs {index}.", f"|{n}|", f"The answer is $\\boxed{{{n}}}$.", False)
    letter = rng.choice("ABCDE")
    yield RealCase(
        "",
        "letter_in_expr",
        f"Pick ({index}).\nA. 1\nB. 2\nC. 3\nD. 4\nE. 5",
        letter,
        f"The answer is $\\boxed{{\\mathrm{{{letter}}}*2}}$.",
        False,
    )


GENERATORS: list[tuple[Callable[[random.Random, int], Iterator[RealCase]], int]] = [
    (_multiple_choice, 260),
    (_answer_block, 220),
    (_closing_sentence, 160),
    (_signs, 100),
    (_long_cot, 60),
    (_hedges, 90),
    (_tools, 90),
    (_equalities, 50),
]


def generate(seed: int = 0, scale: float = 1.0) -> list[RealCase]:
    """Every case, in a fixed order (ids `<category>-<n>`)."""
    rng = random.Random(seed)
    cases: list[RealCase] = []
    for make, count in GENERATORS:
        for index in range(max(1, int(count * scale))):
            for case in make(rng, index):
                cases.append(RealCase(f"{case.category}-{len(cases)}", *list(asdict(case).values())[1:]))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    cases = generate(args.seed, args.scale)
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.category] = counts.get(case.category, 0) + 1
    print(len(cases), counts)


if __name__ == "__main__":
    main()
