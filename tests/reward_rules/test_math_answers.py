"""Answers as models write them, through MathGrader's public API: every category of the
math-grader issue, each with negatives beside its positives, plus the settings that
decide the ambiguous cases (percent, decimal comma) and the identity test's signs.
"""

from __future__ import annotations

import asyncio

import pytest

from arbiter.contract import Result, Sample, Status
from services.reward_rules.math import MathConfig, MathGrader

# (category, reference, response, correct)
CASES: list[tuple[str, str, str, bool]] = [
    # -- thousands separators in every spelling; a number is not a list ------------------------
    ("thousands", "12480", "So the total cost is $\\boxed{12,\\!480}$ dollars.", True),
    ("thousands", "3205000", "The population grows to \\boxed{3{,}205{,}000}.", True),
    ("thousands", "40320", "There are $40,\\! 320$ arrangements, so the answer is $40,\\! 320$.", True),
    ("thousands", "24310", "The final answer is $24,310$", True),
    ("thousands", "7,350", "Final Answer: The final answer is $7350$. I hope it is correct.", True),
    ("thousands", "1500000", "The answer is $1\\,500\\,000$.", True),
    ("thousands", "2500", "\\boxed{x = 2,500}", True),
    ("thousands", "2500", "\\boxed{x = 2,600}", False),
    ("thousands", "1,2,3,4", "The roots are \\boxed{1,234}.", False),
    ("thousands", "5679", "The answer is \\boxed{5,678}.", False),
    ("thousands", "12480", "So the total cost is $\\boxed{12,\\!840}$ dollars.", False),
    # -- sentence answers: the value the sentence states ---------------------------------------------
    ("sentence", "17", "Final Answer: The smallest possible value of $k$ is 17.", True),
    ("sentence", "42", "Final Answer: The number of red marbles Tom has is 42. I hope it is correct.", True),
    ("sentence", "3", "Therefore, the train arrives 3 hours later.", True),
    ("sentence", "56", "Priya has 56 stickers in total.", True),
    ("sentence", "96", "The answer is: the area of triangle $PQR$ is $96$.", True),
    ("sentence", "69", "Final Answer: The area of triangle $PQR$ is 96.", False),
    ("sentence", "17", "Final Answer: The smallest possible value of $k$ is 71.", False),
    ("sentence", "2", "Final Answer: The number of red marbles Tom has is 42. I hope it is correct.", False),
    # -- units and other languages; a later circumstance number never wins -----------------------------
    ("units", "480", "所以小明一共走了**480米**。", True),
    ("units", "25", "因此，答案是 25 个。", True),
    ("units", "615", "答：一共有**615颗**。", True),
    ("units", "64", "Donc il reste 64 € à payer dans 3 mois.", True),
    ("units", "250", "The tank holds \\boxed{250 \\text{ liters}}.", True),
    ("units", "18", "The distance is $18\\,\\mathrm{km}$.", True),
    ("units", "12", "La respuesta es 12 manzanas.", True),
    ("units", "7", "Die Antwort ist 7.", True),
    ("units", "9", "答えは 9 です。", True),
    ("units", "5", "Ответ: 5.", True),
    ("units", "40", "Por lo tanto, quedan 40 litros después de 6 semanas.", True),
    ("units", "3", "Donc il reste 64 € à payer dans 3 mois.", False),
    ("units", "205", "The tank holds \\boxed{250 \\text{ liters}}.", False),
    ("units", "26", "因此，答案是 25 个。", False),
    ("units", "6", "Por lo tanto, quedan 40 litros después de 6 semanas.", False),
    # -- equality chains and approximations ----------------------------------------------------------
    ("chain", "9", "$y = 2+3+4 = 9$", True),
    ("chain", "n = 42", "$n = 7 \\cdot 6 = 42$", True),
    ("chain", "\\frac{2}{7}", "$x = \\frac{2}{7} \\approx 0.29$", True),
    ("chain", "\\sqrt{2}", "$\\sqrt{2} \\approx 1.414$", True),
    ("chain", "\\frac{22}{7} \\approx 3.14", "$\\frac{22}{7}$", True),
    ("chain", "7", "$x = 3+4 = 8$", False),
    ("chain", "\\frac{1}{6}", "$\\frac{1}{7} \\approx 0.14$", False),
    ("chain", "\\frac{2}{7}", "$x = 0.29$", False),
    ("chain", "10", "$2x + 3 = 10$", False),
    # -- references that name what they give; order still matters for tuples -----------------------------
    ("named", "(a,b)=(4,9)", "\\boxed{(4, 9)}", True),
    ("named", "$(x,y,z)=(2,5,11)$", "$(2,5,11)$", True),
    ("named", "$\\frac{AM}{MB}=\\frac{3}{\\sqrt{5}}$", "$\\frac{3\\sqrt{5}}{5}$", True),
    ("named", "$S_1:S_2=5:12$", "$5:12$", True),
    ("named", "2", "$\\lim_{n \\to \\infty} a_n = 2$", True),
    ("named", "5", "$23 \\bmod 6 = 5$", True),
    ("named", "(a,b)=(4,9)", "\\boxed{(9, 4)}", False),
    ("named", "$S_1:S_2=5:12$", "$12:5$", False),
    ("named", "3", "$\\lim_{n \\to \\infty} a_n = 2$", False),
    ("named", "$\\frac{AM}{MB}=\\frac{3}{\\sqrt{5}}$", "$\\frac{\\sqrt{5}}{3}$", False),
    ("named", "x + y = 10", "\\boxed{10}", False),
    # -- multiple choice: the announced letter beats letters in a negation --------------------------------
    ("choice", "C", "The answer is C, because A and B both violate the constraint.", True),
    ("choice", "B", "Answer: (B). Options A and D are wrong.", True),
    ("choice", "B", "B. It cannot be D.", True),
    ("choice", "D", "答案是 D，不是 A。", True),
    ("choice", "(C) 12 meters", "The correct choice is \\boxed{C}", True),
    ("choice", "(C) 12 meters", "The answer is 12 meters.", True),
    ("choice", "A. Paris", "A", True),
    ("choice", "A", "The answer is C, because A and B both violate the constraint.", False),
    ("choice", "D", "B. It cannot be D.", False),
    ("choice", "A", "答案是 D，不是 A。", False),
    ("choice", "(C) 12 meters", "The correct choice is \\boxed{B}", False),
    ("choice", "A. Paris", "B", False),
    # -- several answers ----------------------------------------------------------------------------
    ("several", "-5, 2", "The two solutions are $\\boxed{2}$ and $\\boxed{-5}$.", True),
    ("several", "3, 8", "Part (a): \\boxed{3}; part (b): \\boxed{8}.", True),
    ("several", "1, 6", "\\boxed{x = 1 \\text{ or } x = 6}", True),
    ("several", "1, 6", "The solutions are $x = 1$ or $x = 6$, so \\boxed{x=1 \\text{ or } x=6}", True),
    ("several", "2, 5", "The two solutions are $\\boxed{2}$ and $\\boxed{-5}$.", False),
    ("several", "3, 8", "Maybe \\boxed{5}? Part (a): \\boxed{3}; part (b): \\boxed{8}.", False),
    ("several", "3, 8", "Part (a): \\boxed{3}; part (b): \\boxed{9}.", False),
    ("several", "3, 8", "(a) \\boxed{8}\n(b) \\boxed{3}", False),
    ("several", "3, 8", "**(a)** The answer is $\\boxed{3}$.\n\n**(b)** The answer is $\\boxed{8}$.", True),
    ("several", "1, 6", "\\boxed{x = 1 \\text{ or } x = 7}", False),
    # -- intervals, inequalities, sets ---------------------------------------------------------------------
    ("interval", "$1 \\le x < 4$", "$x \\in [1, 4)$", True),
    ("interval", "[1,4)", "$1 \\le x < 4$", True),
    ("interval", "(-3, 2]", "$-3 < x \\le 2$", True),
    ("interval", "2, 7", "$\\{2, 7\\}$", True),
    ("interval", "\\{2, 7\\}", "\\boxed{7, 2}", True),
    ("interval", "$1 \\le x < 4$", "$x \\in [1, 4]$", False),
    ("interval", "[1,4)", "$1 < x < 4$", False),
    ("interval", "2, 7", "$\\{2, 8\\}$", False),
    # -- LaTeX noise -----------------------------------------------------------------------------------------
    ("latex", "(2, \\frac{\\pi}{3})", "\\boxed{\\left( 2, \\dfrac{\\pi}{3} \\right)}", True),
    ("latex", "0.625", "\\boxed{\\tfrac{5}{8}}", True),
    ("latex", "\\frac{2}{3}", "$\\dfrac{1}{2} + \\frac{1}{6}$", True),
    ("latex", "\\frac{1}{2}", "The answer is $\\\\frac{1}{2}$.", True),
    ("latex", "12", "\\boxed{\\text{12}}", True),
    ("latex", "(2, \\frac{\\pi}{6})", "\\boxed{\\left( 2, \\dfrac{\\pi}{3} \\right)}", False),
    ("latex", "\\frac{1}{3}", "The answer is $\\\\frac{1}{2}$.", False),
    # -- more phrasings: fillers, connectives, set-builder, unions, number words, option texts --------
    ("phrasing", "4", "We find that $k=4$ works, and no larger value does, so $k_{\\max}=4$.", True),
    ("phrasing", "17", "La réponse est donc 17.", True),
    ("phrasing", "17", "La réponse est donc 71.", False),
    ("phrasing", "1, 6", "Thus $x = 1$ or $x = 6$.", True),
    ("phrasing", "1, 6", "The solutions are $x=1$ and $x=6$.", True),
    ("phrasing", "1, 6", "Thus $x = 1$ or $x = 7$.", False),
    ("phrasing", "[1,4)", "The solution set is $\\{x \\mid 1 \\le x < 4\\}$.", True),
    ("phrasing", "[1,4)", "The solution set is $\\{x \\mid 1 < x < 4\\}$.", False),
    ("phrasing", "(-\\infty, -1) \\cup (3, \\infty)", "$x < -1$ or $x > 3$", True),
    ("phrasing", "(-\\infty, -1) \\cup (3, \\infty)", "$x < -1$ or $x > 4$", False),
    ("phrasing", "12", "The answer is twelve.", True),
    ("phrasing", "12", "The answer is eleven.", False),
    ("phrasing", "50", "共有50名学生。", True),
    ("phrasing", "51", "共有50名学生。", False),
    ("phrasing", "B", "The answer is not A; it's B.", True),
    ("phrasing", "A", "The answer is not A; it's B.", False),
    ("phrasing", "(C) 12 meters", "12 meters", True),
    ("phrasing", "(C) 12 meters", "13 meters", False),
    ("phrasing", "A. Paris", "The capital is Paris.", True),
    ("phrasing", "A. Paris", "The capital is London.", False),
    ("phrasing", "\\angle ABC = 30^\\circ", "\\boxed{30}", True),
    ("phrasing", "\\angle ABC = 30^\\circ", "\\boxed{60}", False),
    ("phrasing", "\\frac{3}{2}", "$x = \\frac{3}{2}$ or $x = 1.5$", True),
    ("phrasing", "1", "\\boxed{1 \\text{ or } 2}", False),
    ("phrasing", "A", "A is correct, I believe.", True),
    ("phrasing", "I", "A is correct, I believe.", False),
    ("phrasing", "1.5", "\\boxed{1.51}", False),
    ("unicode", "\\frac12", "\\boxed{½}", True),
    ("unicode", "2\\pi", "\\boxed{2π}", True),
    ("unicode", "x^2", "\\boxed{x²}", True),
    ("unicode", "3", "\\boxed{３}", True),
    ("unicode", "(-\\infty, \\infty)", "\\boxed{\\mathbb{R}}", True),
    ("unicode", "(-\\infty, \\infty)", "\\boxed{\\text{all real numbers}}", True),
    ("unicode", "\\frac13", "\\boxed{½}", False),
    ("unicode", "2", "\\boxed{2π}", False),
    ("unicode", "x^3", "\\boxed{x²}", False),
    ("unicode", "(0, \\infty)", "\\boxed{\\mathbb{R}}", False),
    ("chain", "\\frac{1}{6}", "The probability is 1/6 ≈ 0.167.", True),
    ("chain", "\\frac{1}{5}", "The probability is 1/6 ≈ 0.167.", False),
    # -- identities are tested on both signs of their variables ------------------------
    ("signs", "x", "\\boxed{|x|}", False),
    ("signs", "x", "\\boxed{\\sqrt{x^2}}", False),
    ("signs", "5-x", "\\boxed{|x-5|}", False),
    ("signs", "|x|", "\\boxed{\\sqrt{x^2}}", True),
    ("signs", "x^2-1", "\\boxed{(x-1)(x+1)}", True),
    ("signs", "\\sqrt{x}", "\\boxed{x^{1/2}}", True),
]


@pytest.fixture(scope="module")
def results(math_grader: MathGrader) -> list[Result]:
    samples = [Sample(response=response, label=label) for _, label, response, _ in CASES]
    return asyncio.run(math_grader.score(samples))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_answer(index: int, results: list[Result]) -> None:
    category, label, response, correct = CASES[index]
    result = results[index]
    assert result.status == Status.OK, result.detail
    message = f"[{category}] {label!r} vs {response!r}: {result.detail}"
    assert result.score == (1.0 if correct else 0.0), message


def test_every_category_has_negatives_beside_positives() -> None:
    for category in {c for c, *_ in CASES}:
        verdicts = {correct for c, _, _, correct in CASES if c == category}
        assert verdicts == {True, False}, category


async def _score(config: MathConfig, pairs: list[tuple[str, str]]) -> list[float]:
    grader = MathGrader(config)
    try:
        results = await grader.score([Sample(response=r, label=label) for label, r in pairs])
    finally:
        await grader.aclose()
    assert all(r.status == Status.OK for r in results)
    return [r.score for r in results]


async def test_percent_rule_is_one_reading_never_both() -> None:
    pairs = [
        ("42\\%", "\\boxed{42}"),
        ("42\\%", "\\boxed{0.42}"),
        ("0.42", "\\boxed{42\\%}"),
        ("42\\%", "\\boxed{42\\%}"),
    ]
    assert await _score(MathConfig(workers=1), pairs) == [1.0, 0.0, 0.0, 1.0]
    assert await _score(MathConfig(workers=1, percent="value"), pairs) == [0.0, 1.0, 1.0, 1.0]


async def test_decimal_comma_rule() -> None:
    pairs = [
        ("1.22", "\\boxed{1,22}"),
        ("1, 22", "\\boxed{1,22}"),
        ("1234", "\\boxed{1,234}"),
        ("-1.5", "La réponse est $-1,5$."),
        ("2.5", "La réponse est $x = 2,5$."),
    ]
    assert await _score(MathConfig(workers=1), pairs) == [1.0, 1.0, 1.0, 1.0, 1.0]  # auto
    assert await _score(MathConfig(workers=1, decimal_comma="never"), pairs) == [0.0, 1.0, 1.0, 0.0, 0.0]
    assert await _score(MathConfig(workers=1, decimal_comma="always"), pairs) == [1.0, 0.0, 1.0, 1.0, 1.0]
