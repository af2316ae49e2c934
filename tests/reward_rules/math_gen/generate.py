"""A template generator for differential testing of math graders.

    .venv/bin/python -m tests.reward_rules.math_gen.generate [--out PATH] [--seed 0]

Every case is built from an answer kind (integers with thousands separators, decimals,
fractions, radicals, tuples, intervals, sets, units, equality chains, approximations,
multiple choice, several answers), one of its written forms, a phrasing (English,
French, Spanish, German, Chinese, Japanese, Russian; boxed, announced, sentence, tag,
bold), a position (answer last, or followed by a sentence that is not the answer) and
distractor numbers in the reasoning before it. Its label is known by construction: a
form of the right value is correct, a form of a nearby wrong value is not. The output
(`corpus.jsonl` beside this file) is kept in the repository, and `bench/bench_math.py`
runs this grader and Math-Verify over it side by side.

Pure and deterministic: the same seed writes the same file.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Case", "generate", "main"]

CORPUS = Path(__file__).with_name("corpus.jsonl")


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    reference: str
    response: str
    expected: bool
    language: str
    form: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False)


@dataclass(frozen=True)
class Answer:
    """A reference, written forms of it (right) and of near misses (wrong)."""

    category: str
    reference: str
    right: tuple[str, ...]
    wrong: tuple[str, ...]
    plain: bool = False  # a bare number: it may stand in prose without math delimiters
    choice: bool = False  # a multiple-choice letter


# -- answer kinds --------------------------------------------------------------------------------
def _thousands(rng: random.Random) -> Answer:
    value = rng.choice([rng.randint(1000, 99_999), rng.randint(100_000, 9_999_999)])
    text = f"{value:,}"
    forms = (
        text,
        text.replace(",", "{,}"),
        text.replace(",", ",\\!"),
        text.replace(",", ",\\! "),
        text.replace(",", "\\,"),
        str(value),
    )
    wrong_value = value + rng.choice([-1, 1, 10, -100, 1000])
    swapped = f"{wrong_value:,}"
    return Answer(
        "thousands",
        rng.choice([str(value), text]),
        forms,
        (swapped, swapped.replace(",", "{,}"), str(wrong_value), str(value * 10)),
        plain=True,
    )


def _integer(rng: random.Random) -> Answer:
    value = rng.randint(2, 999)
    return Answer(
        "integer",
        str(value),
        (str(value), f"{value}.0", f"+{value}" if value % 7 == 0 else str(value)),
        (str(value + rng.choice([1, -1, 2])), str(-value), f"{value}{rng.randint(0, 9)}"),
        plain=True,
    )


def _decimal(rng: random.Random) -> Answer:
    quarter = rng.randint(1, 60)
    value = quarter / 4 if quarter % 4 else quarter / 4 + 0.5
    text = f"{value:g}"
    numerator, denominator = (int(value * 4), 4) if value * 4 == int(value * 4) else (int(value * 2), 2)
    wrong = f"{value + 0.1:g}"
    return Answer(
        "decimal",
        text,
        (text, f"\\frac{{{numerator}}}{{{denominator}}}", f"{text}0" if "." in text else f"{text}.0"),
        (wrong, f"\\frac{{{denominator}}}{{{numerator}}}" if numerator != denominator else wrong),
        plain=True,
    )


def _fraction(rng: random.Random) -> Answer:
    q = rng.choice([3, 5, 7, 9, 11, 13])
    p = rng.choice([n for n in range(1, 2 * q) if n % q and _gcd(n, q) == 1])
    k = rng.randint(2, 4)
    return Answer(
        "fraction",
        rng.choice([f"\\frac{{{p}}}{{{q}}}", f"\\dfrac{{{p}}}{{{q}}}", f"{p}/{q}"]),
        (
            f"\\frac{{{p}}}{{{q}}}",
            f"\\dfrac{{{p}}}{{{q}}}",
            f"\\tfrac{{{p}}}{{{q}}}",
            f"{p}/{q}",
            f"\\frac{{{p * k}}}{{{q * k}}}",
        ),
        (f"\\frac{{{q}}}{{{p}}}", f"\\frac{{{p + 1}}}{{{q}}}", f"\\frac{{{p}}}{{{q + 1}}}"),
    )


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _radical(rng: random.Random) -> Answer:
    a, b = rng.randint(2, 6), rng.choice([2, 3, 5, 6, 7])
    return Answer(
        "radical",
        f"{a}\\sqrt{{{b}}}",
        (f"{a}\\sqrt{{{b}}}", f"\\sqrt{{{a * a * b}}}", f"{a} \\sqrt {b}", f"\\sqrt{{{b}}} \\cdot {a}"),
        (f"{a + 1}\\sqrt{{{b}}}", f"\\sqrt{{{a * b}}}", f"{a}\\sqrt{{{b + 1}}}"),
    )


def _tuple(rng: random.Random) -> Answer:
    x, y = rng.sample(range(-9, 15), 2)
    names = rng.choice(["(a,b)", "(x,y)", "(m, n)"])
    reference = rng.choice([f"({x},{y})", f"{names}=({x},{y})"])
    return Answer(
        "tuple",
        reference,
        (f"({x}, {y})", f"\\left( {x}, {y} \\right)", f"{names} = ({x}, {y})"),
        (f"({y}, {x})", f"({x}, {y + 1})", f"\\left( {x + 1}, {y} \\right)"),
    )


def _interval(rng: random.Random) -> Answer:
    low = rng.randint(-6, 4)
    high = low + rng.randint(1, 7)
    left, right = rng.choice([("[", ")"), ("(", "]"), ("[", "]"), ("(", ")")])
    lo_op = "\\le" if left == "[" else "<"
    hi_op = "\\le" if right == "]" else "<"
    other_right = ")" if right == "]" else "]"
    reference = rng.choice([f"{left}{low}, {high}{right}", f"{low} {lo_op} x {hi_op} {high}"])
    return Answer(
        "interval",
        reference,
        (
            f"{left}{low},{high}{right}",
            f"x \\in {left}{low}, {high}{right}",
            f"{low} {lo_op} x {hi_op} {high}",
            f"\\left{left}{low}, {high}\\right{right}",
        ),
        (
            f"{left}{low}, {high}{other_right}",
            f"x \\in {left}{low}, {high + 1}{right}",
            f"{low} {lo_op} x {hi_op} {high + 1}",
        ),
    )


def _set(rng: random.Random) -> Answer:
    a, b = sorted(rng.sample(range(-8, 12), 2))
    c = b + rng.randint(1, 3)
    return Answer(
        "set",
        rng.choice([f"\\{{{a}, {b}\\}}", f"{a}, {b}", f"{b}, {a}"]),
        (
            f"\\{{{a}, {b}\\}}",
            f"{b}, {a}",
            f"x = {a} \\text{{ or }} x = {b}",
            f"x = {b} \\text{{ and }} x = {a}",
        ),
        (f"\\{{{a}, {c}\\}}", f"{a}", f"x = {a} \\text{{ or }} x = {c}"),
    )


_UNITS = (
    ("\\text{ liters}", "liters"),
    ("\\,\\mathrm{km}", "km"),
    ("\\text{ cm}", "cm"),
    ("米", "米"),
    (" 个", "个"),
    ("颗", "颗"),
    (" €", "€"),
    ("\\text{ dollars}", "dollars"),
    ("\\text{ minutes}", "minutes"),
)


def _units(rng: random.Random) -> Answer:
    value = rng.randint(3, 900)
    latex, _ = rng.choice(_UNITS)
    wrong = value + rng.choice([-10, 1, 9, 100])
    return Answer(
        "units",
        rng.choice([str(value), f"{value}{latex}"]),
        (f"{value}{latex}", str(value)),
        (f"{wrong}{latex}", str(wrong)),
        plain=True,
    )


def _chain(rng: random.Random) -> Answer:
    a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(2, 9)
    total = a + b * c
    var = rng.choice(["x", "y", "n", "S"])
    return Answer(
        "chain",
        str(total),
        (f"{var} = {a} + {b} \\cdot {c} = {total}", f"{a} + {b} \\times {c} = {total}"),
        (f"{var} = {a} + {b} \\cdot {c} = {total + 1}", f"{var} = {total} - {c} = {total - c}"),
    )


def _approximation(rng: random.Random) -> Answer:
    p, q = rng.choice([(2, 7), (1, 3), (5, 6), (3, 11), (4, 9), (7, 12)])
    approx = f"{p / q:.2f}"
    other_p = p + 1
    exact = f"\\frac{{{p}}}{{{q}}}"
    reference = rng.choice([exact, f"{exact} \\approx {approx}"])
    return Answer(
        "approximation",
        reference,
        (f"{exact} \\approx {approx}", f"x = {exact} \\approx {approx}", exact),
        (f"\\frac{{{other_p}}}{{{q}}} \\approx {other_p / q:.2f}", f"x = \\frac{{{p}}}{{{q + 1}}}"),
    )


def _named(rng: random.Random) -> Answer:
    a, b = rng.randint(2, 9), rng.randint(10, 20)
    kind = rng.randrange(4)
    if kind == 0:
        return Answer("named", f"S_1:S_2={a}:{b}", (f"{a}:{b}", f"S_1 : S_2 = {a}:{b}"), (f"{b}:{a}",))
    if kind == 1:
        return Answer(
            "named",
            f"\\frac{{AM}}{{MB}}=\\frac{{{a}}}{{\\sqrt{{{b}}}}}",
            (f"\\frac{{{a}}}{{\\sqrt{{{b}}}}}", f"\\frac{{{a}\\sqrt{{{b}}}}}{{{b}}}"),
            (f"\\frac{{{b}}}{{\\sqrt{{{a}}}}}", f"\\frac{{{a}}}{{{b}}}"),
        )
    if kind == 2:
        return Answer(
            "named",
            str(a),
            (f"\\lim_{{n \\to \\infty}} a_n = {a}", f"{a + b * 3} \\bmod {b} = {a}" if a < b else str(a)),
            (f"\\lim_{{n \\to \\infty}} a_n = {a + 1}",),
        )
    return Answer(
        "named",
        f"(x,y,z)=({a},{b},{a + b})",
        (f"({a},{b},{a + b})", f"(x, y, z) = ({a}, {b}, {a + b})"),
        (f"({b},{a},{a + b})", f"({a},{b},{a + b + 1})"),
    )


def _union(rng: random.Random) -> Answer:
    low = rng.randint(-6, 2)
    high = low + rng.randint(2, 6)
    return Answer(
        "union",
        rng.choice([f"(-\\infty, {low}) \\cup ({high}, \\infty)", f"x < {low} \\text{{ or }} x > {high}"]),
        (
            f"(-\\infty,{low})\\cup({high},+\\infty)",
            f"x < {low} \\text{{ or }} x > {high}",
            f"({high}, \\infty) \\cup (-\\infty, {low})",
        ),
        (
            f"(-\\infty,{low}]\\cup({high},\\infty)",
            f"x < {low} \\text{{ or }} x > {high + 1}",
            f"({low}, {high})",
        ),
    )


def _unicode(rng: random.Random) -> Answer:
    a = rng.randint(2, 9)
    kind = rng.randrange(3)
    if kind == 0:
        return Answer("unicode", "\\frac{1}{2}", ("½", "1/2", "0.5"), ("⅓", "¼", "2"))
    if kind == 1:
        return Answer("unicode", f"{a}\\pi", (f"{a}π", f"{a} \\pi", f"π \\cdot {a}"), (f"{a + 1}π", str(a)))
    return Answer("unicode", f"x^{a}", (f"x^{{{a}}}", f"x{'⁰¹²³⁴⁵⁶⁷⁸⁹'[a]}"), (f"x^{{{a + 1}}}", f"{a}x"))


def _parts(rng: random.Random) -> Answer:
    a, b = rng.sample(range(2, 40), 2)
    return Answer(
        "parts",
        f"{a}, {b}",
        (f"(a) \\boxed{{{a}}}\n(b) \\boxed{{{b}}}", f"Part (a): \\boxed{{{a}}}; part (b): \\boxed{{{b}}}"),
        (
            f"(a) \\boxed{{{b}}}\n(b) \\boxed{{{a}}}",
            f"Part (a): \\boxed{{{a}}}; part (b): \\boxed{{{b + 1}}}",
        ),
    )


def _several(rng: random.Random) -> Answer:
    a, b = rng.sample(range(-9, 20), 2)
    return Answer(
        "several",
        rng.choice([f"{a}, {b}", f"{b}, {a}"]),
        (f"\\boxed{{{a}}} \\text{{ and }} \\boxed{{{b}}}", f"x = {a} \\text{{ or }} x = {b}"),
        (
            f"\\boxed{{{a}}} \\text{{ and }} \\boxed{{{b + 1}}}",
            f"x = {a} \\text{{ or }} x = {-b if b else 1}",
        ),
    )


KINDS: tuple[Callable[[random.Random], Answer], ...] = (
    _thousands,
    _integer,
    _decimal,
    _fraction,
    _radical,
    _tuple,
    _interval,
    _set,
    _units,
    _chain,
    _approximation,
    _named,
    _several,
    _union,
    _unicode,
    _parts,
)

# -- phrasings: (language, template); {a} is the answer in math, {p} the answer in prose --------
MATH_PHRASES: tuple[tuple[str, str], ...] = (
    ("en", "Therefore, the final answer is $\\boxed{{{a}}}$."),
    ("en", "**Final Answer**\n\\[\n\\boxed{{{a}}}\n\\]"),
    ("en", "Final Answer: The final answer is ${a}$. I hope it is correct."),
    ("en", "The answer is ${a}$."),
    ("en", "So the answer is \\({a}\\)."),
    ("en", "**Answer:** ${a}$"),
    ("en", "<answer>{a}</answer>"),
    ("en", "Thus we get $\\boxed{{{a}}}$ as required."),
    ("fr", "Donc, la réponse finale est $\\boxed{{{a}}}$."),
    ("fr", "La réponse est ${a}$."),
    ("es", "Por lo tanto, la respuesta es ${a}$."),
    ("es", "La respuesta final es $\\boxed{{{a}}}$."),
    ("de", "Die Antwort ist ${a}$."),
    ("zh", "因此，答案是 ${a}$。"),
    ("zh", "所以最终答案为 $\\boxed{{{a}}}$。"),
    ("ja", "答えは ${a}$ です。"),
    ("ru", "Ответ: ${a}$."),
    ("en", "Thus ${a}$ is the answer."),
    ("en", "### Final Answer\n\\[\n\\boxed{{{a}}}\n\\]"),
    ("en", "Hence, we conclude: ${a}$."),
    ("pt", "Portanto, a resposta é ${a}$."),
    ("it", "Quindi la risposta è ${a}$."),
    ("ko", "정답은 ${a}$입니다."),
)
PROSE_PHRASES: tuple[tuple[str, str], ...] = (
    ("en", "Final Answer: The smallest possible value of $k$ is {p}."),
    ("en", "Final Answer: The number of marbles Tom has is {p}. I hope it is correct."),
    ("en", "Therefore, Priya has {p} in total."),
    ("en", "So the answer is {p}."),
    ("en", "Answer: {p}"),
    ("en", "The final answer is {p}"),
    ("en", "After {d} days, the tank holds {p}."),
    ("en", "Hence the total is **{p}**."),
    ("en", "\n#### {p}"),
    ("fr", "Donc il reste {p} à payer dans {d} mois."),
    ("fr", "La réponse est {p}."),
    ("es", "Entonces, la respuesta es {p}."),
    ("es", "Por lo tanto, quedan {p} después de {d} semanas."),
    ("de", "Die Antwort ist {p}."),
    ("zh", "因此，答案是 {p}。"),
    ("zh", "所以小明一共走了**{p}**。"),
    ("zh", "答：一共有 {p}。"),
    ("ja", "答えは {p} です。"),
    ("ru", "Ответ: {p}."),
    ("en", "The result: {p}"),
    ("en", "{p} is the answer."),
    ("en", "The answer is {p}, since every other case fails."),
    ("pt", "Portanto, a resposta é {p}."),
    ("it", "Quindi la risposta è {p}."),
    ("ko", "답: {p}"),
)
CHOICE_PHRASES: tuple[tuple[str, str], ...] = (
    ("en", "The answer is {L}, because {X} and {Y} both violate the constraint."),
    ("en", "Answer: ({L}). Options {X} and {Y} are wrong."),
    ("en", "{L}. It cannot be {X}."),
    ("en", "The correct choice is \\boxed{{{L}}}"),
    ("en", "{X} is wrong and {Y} is wrong, so the answer is {L}."),
    ("en", "Checking each option, only ({L}) works; ({X}) fails at $x = 2$."),
    ("en", "**{L}**"),
    ("fr", "La réponse est {L}, pas {X}."),
    ("es", "La respuesta correcta es la opción {L}."),
    ("zh", "答案是 {L}，不是 {X}。"),
    ("zh", "正确答案是 {L}"),
)
REASONING = (
    "First, note that $3 + {n} = {t}$.",
    "We have {n} apples and {m} oranges at the start.",
    "Wait, let me double-check: ${n} \\times 2 = {k}$.",
    "Substituting $x = {n}$ gives ${m}$, which is too large.",
    "D'abord, on calcule ${n} + {m} = {s}$.",
    "首先，{n} 加 {m} 等于 {s}。",
    "Primero, ${n} \\cdot 2 = {k}$.",
)
TRAILERS = (
    "",
    "",
    " I hope it is correct.",
    " This took {d} steps to check.",
    "\n\nWe used {d} substitutions in total to verify this.",
)


def _reasoning(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 3)):
        n, m = rng.randint(2, 99), rng.randint(2, 99)
        lines.append(rng.choice(REASONING).format(n=n, m=m, k=2 * n, s=n + m, t=n + 3))
    return " ".join(lines)


def _prose_form(form: str) -> str | None:
    """An answer as it stands in prose: numbers and units bare, other math in `$...$`."""
    if "\\boxed" in form or "\\text{ or }" in form or "\\text{ and }" in form:
        return None
    if all(ch.isdigit() or ch in ",.+-" for ch in form):
        return form
    for latex, word in _UNITS:
        if form.endswith(latex) and form[: -len(latex)].replace(",", "").isdigit():
            return f"{form[: -len(latex)]} {word}" if word.isascii() else f"{form[: -len(latex)]}{word}"
    return f"${form}$"


# Reasoning that names the other value first: the final answer must win over it.
TRAPS = (
    "At first I got ${x}$, but that ignores the second case.",
    "Hmm, ${x}$ does not satisfy the original equation.",
    "Let me reconsider: is it ${x}$? No, recompute.",
    "On pourrait croire que c'est ${x}$, mais non.",
    "一开始我算出 ${x}$，但这是错的。",
)


def _trap(answer: Answer, expected: bool, rng: random.Random) -> str:
    """Sometimes mention a form of the other verdict's value in the reasoning."""
    others = answer.wrong if expected else answer.right
    if rng.random() < 0.35 and others:
        other = rng.choice(others)
        if "\\boxed" not in other:
            return rng.choice(TRAPS).replace("{x}", other)
    return ""


def _cases_for(answer: Answer, rng: random.Random, serial: Iterator[int]) -> Iterator[Case]:
    for expected, forms in ((True, answer.right), (False, answer.wrong)):
        for form in forms:
            phrases = list(MATH_PHRASES)
            if "\\boxed" in form:
                phrases = [(lang, t) for lang, t in phrases if "\\boxed" not in t and "<answer>" not in t]
            for language, template in rng.sample(phrases, k=min(2, len(phrases))):
                if "\\boxed" in form and "$" in template:
                    template = template.replace("${a}$", "{a}")
                trailer = rng.choice(TRAILERS).format(d=rng.randint(2, 9))
                body = template.format(a=form)
                yield Case(
                    f"gen-{next(serial):05d}",
                    answer.category,
                    answer.reference,
                    f"{_reasoning(rng)} {_trap(answer, expected, rng)}\n\n{body}{trailer}".strip(),
                    expected,
                    language,
                    form,
                )
            prose = _prose_form(form) if answer.plain else None
            if prose is not None:
                for language, template in rng.sample(PROSE_PHRASES, k=2):
                    body = template.format(p=prose, d=rng.randint(2, 9))
                    yield Case(
                        f"gen-{next(serial):05d}",
                        answer.category,
                        answer.reference,
                        f"{_reasoning(rng)} {_trap(answer, expected, rng)}\n\n{body}".strip(),
                        expected,
                        language,
                        form,
                    )


_OPTIONS = ("12 meters", "Paris", "$\\frac{3}{4}$", "17", "the empty set", "$2\\sqrt{3}$")


def _choice_cases(rng: random.Random, serial: Iterator[int]) -> Iterator[Case]:
    letters = "ABCDE"
    for _ in range(120):
        gold, x, y = rng.sample(letters, 3)
        option = rng.choice(_OPTIONS)
        reference = rng.choice([gold, f"({gold})", f"({gold}) {option}", f"{gold}. {option}"])
        language, template = rng.choice(CHOICE_PHRASES)
        for expected, chosen, other in ((True, gold, x), (False, x, gold)):
            body = template.format(L=chosen, X=other, Y=y if y != chosen else gold)
            yield Case(
                f"gen-{next(serial):05d}",
                "choice",
                reference,
                f"{_reasoning(rng)}\n\n{body}".strip(),
                expected,
                language,
                chosen,
            )


def generate(seed: int = 0, per_kind: int = 40) -> list[Case]:
    """The corpus: every kind `per_kind` times, each form in two or more phrasings."""
    rng = random.Random(seed)
    serial = iter(range(1, 10**6))
    cases: list[Case] = []
    for kind in KINDS:
        for _ in range(per_kind):
            cases.extend(_cases_for(kind(rng), rng, serial))
    cases.extend(_choice_cases(rng, serial))
    return cases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=CORPUS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cases = generate(args.seed)
    args.out.write_text("".join(case.to_json() + "\n" for case in cases), encoding="utf-8")
    print(f"{len(cases)} cases ({sum(c.expected for c in cases)} correct) -> {args.out}")


if __name__ == "__main__":
    main()
