"""Answers as models write them, through the public API (`MathGrader.score`).

Each category holds positives beside negatives. The generated real-output-style corpus
(math_gen/real_style.py) covers the same categories at scale; these are the cases a
reader checks by eye.
"""

from __future__ import annotations

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathGrader


async def _score(grader: MathGrader, label: str, response: str, prompt: str = "") -> float:
    [result] = await grader.score([Sample(prompt=prompt, response=response, label=label)])
    assert result.status == Status.OK, result.detail
    return result.score


# -- 7, 8: equalities that are not, and one that is -----------------------------------------
@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        ("12:00", "The time is $\\boxed{1:00}$.", 0.0),  # a zero part: every cross product is 0
        ("1:00", "The time is $\\boxed{1:00}$.", 1.0),
        ("5:12", "$\\boxed{10:24}$", 1.0),
        ("0:5", "$\\boxed{0:7}$", 0.0),
        ("7 = 11a+c", "So $\\boxed{11a+c}$.", 0.0),  # only the unnamed side of the equation
        ("7 = 11a+c", "So $\\boxed{11a+c=7}$.", 1.0),
        ("7 = x", "So $\\boxed{7}$.", 1.0),
        ("\\sqrt{1/n}", "$\\boxed{\\frac{1}{\\sqrt{n}}}$", 1.0),  # real where both are real
        ("\\frac{1}{\\sqrt{n}}", "$\\boxed{\\sqrt{\\frac{1}{n}}}$", 1.0),
        ("\\sqrt{1/n}", "$\\boxed{\\frac{1}{n}}$", 0.0),
        ("|x|", "$\\boxed{x}$", 0.0),  # both real everywhere: negative points separate them
        ("\\sqrt{x^2}", "$\\boxed{x}$", 0.0),
        ("|x-5|", "$\\boxed{5-x}$", 0.0),
    ],
)
async def test_equalities(math_grader: MathGrader, label: str, response: str, expected: float) -> None:
    assert await _score(math_grader, label, response) == expected


# -- 1: multiple choice as models write it ---------------------------------------------------
_OPTIONS = "How long does the trip take?\nA. 45 days\nB. 52 days\nC. $\\frac{\\pi}{6}$\nD. 78 days"
_INLINE = "Pick one: (A) 12 (B) 15 (C) 18 (D) 21"


@pytest.mark.parametrize(
    ("label", "prompt", "response", "expected"),
    [
        ("B", "", "Solution: Choice_B", 1.0),
        ("B", "", "Solution: Choice_C", 0.0),
        ("B", "", "After checking each case.\n\nChoice_B", 1.0),
        ("B", "", "Answer: (B)", 1.0),
        ("B", "", "Answer: (D)", 0.0),
        ("B", "", "Comparing all four, the correct option is B.", 1.0),
        ("B", "", "Comparing all four, the correct option is A.", 0.0),
        ("B", "", "Thus the answer:\n\n**B**", 1.0),
        ("B", "", "Thus the answer:\n\n**C**", 0.0),
        ("B", "", "I choose (B) because the others overshoot.", 1.0),
        # The option's text instead of its letter, mapped through the prompt's options.
        ("C", _OPTIONS, "So the angle is $\\boxed{\\frac{\\pi}{6}}$.", 1.0),
        ("B", _OPTIONS, "So the angle is $\\boxed{\\frac{\\pi}{6}}$.", 0.0),
        ("C", _INLINE, "The answer is 18.", 1.0),
        ("C", _INLINE, "The answer is 15.", 0.0),
        # References that carry the option's text, or are only the text.
        ("\\frac{\\pi}{6}", _OPTIONS, "The correct answer is option C.", 1.0),
        ("\\frac{\\pi}{6}", _OPTIONS, "The correct answer is option D.", 0.0),
        ("(D) 78 days", _OPTIONS, "Answer: D", 1.0),
        ("(D) 78 days", _OPTIONS, "Answer: A", 0.0),
        # Letters named while analysing options never beat the stated final choice.
        ("A", _OPTIONS, "Option D: 78 days - too far. Step 7: D. 78 days is not correct.\n\nAnswer: A", 1.0),
        ("D", _OPTIONS, "Option D: 78 days - too far. Step 7: D. 78 days is not correct.\n\nAnswer: A", 0.0),
        # No stated letter: no fallback to the last letter or number anywhere.
        ("D", _OPTIONS, "Option D: 78 days - too far. Option A: 45 days - too short.", 0.0),
        ("D", _OPTIONS, "We get 78 days for the first leg and then more.", 0.0),
        ("B", "", "None of the choices is correct.", 0.0),
        ("B", _OPTIONS, "None of the options match: B would need 52 days.", 0.0),
        # Several letters stated: a hedge.
        ("B", "", "The answer is B or D.", 0.0),
        ("B", "", "$\\boxed{B}$ or $\\boxed{D}$", 0.0),
        # More ways of stating a letter, each beside a wrong one.
        ("B", "", "the answer is b", 1.0),
        ("C", "", "the answer is b", 0.0),
        ("B", "", "Answer: [B]", 1.0),
        ("C", "", "Answer: [B]", 0.0),
        ("B", "", "So, the correct answer is:\n\n**B. 52 days**", 1.0),
        ("B", "", "Final Answer: The final answer is B. I hope it is correct.", 1.0),
        ("A", "", "Final Answer: The final answer is B. I hope it is correct.", 0.0),
        ("B", _OPTIONS, "Therefore, it takes 52 days.", 1.0),
        ("D", _OPTIONS, "Therefore, it takes 52 days.", 0.0),
        ("A", "", "The answer is a prime number, so we look again.", 0.0),  # the article, not A
        ("B", _INLINE, "15 is the only value that fits.", 1.0),  # the option's value, stated first
        ("C", _INLINE, "15 is the only value that fits.", 0.0),
        # A letter read out of an expression is not a choice.
        ("E", "", "The answer is $\\boxed{\\mathrm{E}*2}$.", 0.0),
        ("E", "", "The answer is $\\boxed{\\mathrm{E}}$.", 1.0),
    ],
)
async def test_multiple_choice(
    math_grader: MathGrader, label: str, prompt: str, response: str, expected: float
) -> None:
    assert await _score(math_grader, label, response, prompt) == expected


async def test_multiple_choice_without_a_letter_is_undecided(math_grader: MathGrader) -> None:
    [result] = await math_grader.score([Sample(prompt=_OPTIONS, response="Option D: too far.", label="D")])
    assert result.score == 0.0 and result.logs["math/undecided"] == 1.0


# -- 2: answer blocks --------------------------------------------------------------------------
_WORK = "We have $x + 3 = 12$, so $x = 9$. Then $2 \\cdot 9 = 18$ and $18 - 5 = 13$.\n"


@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        ("(15, -29)", _WORK + "I conclude that my answer is correct.\n\n# Answer\n\n(15, -29)", 1.0),
        ("(15, -29)", _WORK + "I conclude that my answer is correct.\n\n# Answer\n\n(-29, 15)", 0.0),
        ("12\\pi", _WORK + "# Answer\n\n12\\pi\n", 1.0),
        ("12\\pi", _WORK + "# Answer\n\n12\n", 0.0),
        ("1+2i", _WORK + "# Answer\n\n1+2i", 1.0),
        ("1+2i", _WORK + "# Answer\n\n1-2i", 0.0),
        ("[-2, 7]", _WORK + "# Answer\n\n[-2, 7]", 1.0),
        ("[-2, 7]", _WORK + "# Answer\n\n(-2, 7)", 0.0),
        ("3, 7, 5", _WORK + "# Answer\n\n3, 7, 5", 1.0),
        ("2k", _WORK + "# Answer\n\n2k", 1.0),
        ("2k", _WORK + "# Answer\n\n3k", 0.0),
        ("18", _WORK + "The answer is: 18", 1.0),
        ("18", _WORK + "The answer is: 13", 0.0),
        # The words around the block are not the answer; the value the reasoning holds is not it.
        ("-50", "I conclude that my answer is correct.\n\n# Answer\n\n-50", 1.0),
        ("13", _WORK + "I conclude that my answer is correct.\n\n# Answer\n\n-50", 0.0),
        ("-50", _WORK + "I conclude that my answer is correct. # Answer -50", 1.0),  # one line
        ("50", _WORK + "I conclude that my answer is correct. # Answer -50", 0.0),
    ],
)
async def test_answer_blocks(math_grader: MathGrader, label: str, response: str, expected: float) -> None:
    assert await _score(math_grader, label, response) == expected


# -- 3: a closing sentence that states the answer first ------------------------------------------
@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        ("5", _WORK + "5 cars drove through the traffic jam in the first 15 minutes.", 1.0),
        ("15", _WORK + "5 cars drove through the traffic jam in the first 15 minutes.", 0.0),
        ("16", _WORK + "16 people think that horse #12 will win.", 1.0),
        ("12", _WORK + "16 people think that horse #12 will win.", 0.0),
        ("40", _WORK + "So 40 apples are left after 3 days.", 1.0),
        ("3", _WORK + "So 40 apples are left after 3 days.", 0.0),
        ("5", _WORK + "2 apples plus 3 apples is 5 apples.", 1.0),  # a stated sum, not a count first
        ("12", "12 apples and 3 bananas", 0.0),  # several counts: no one answer
        ("25", "He counts again. 10 minutes later, he had 25 marbles.", 1.0),  # an introductory phrase
        ("10", "He counts again. 10 minutes later, he had 25 marbles.", 0.0),
    ],
)
async def test_closing_sentence(math_grader: MathGrader, label: str, response: str, expected: float) -> None:
    assert await _score(math_grader, label, response) == expected


# -- 4: signs and delimiters --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        ("-\\frac{\\pi}{6}", _WORK + "So the angle is -$\\pi/6$.", 1.0),
        ("\\frac{\\pi}{6}", _WORK + "So the angle is -$\\pi/6$.", 0.0),
        ("-\\frac{\\pi}{6}", _WORK + "The answer is -$\\frac{\\pi}{6}$.", 1.0),
        ("\\frac{\\pi}{6}", _WORK + "The answer is -$\\frac{\\pi}{6}$.", 0.0),
        ("-5", _WORK + "Final answer: -$5$", 1.0),
        ("5", _WORK + "Final answer: -$5$", 0.0),
        ("7", _WORK + "We subtract 3-$x$ from both sides and get $7$.", 1.0),  # a minus between terms
    ],
)
async def test_signs(math_grader: MathGrader, label: str, response: str, expected: float) -> None:
    assert await _score(math_grader, label, response) == expected


# -- 6: hedging is never paid -------------------------------------------------------------------
_CASES_LISTED = (
    "Depending on the case there are no solutions, exactly one solution, exactly two solutions, "
    "infinitely many solutions, or no such number."
)
_WORD_REFERENCES = [
    "no solutions",
    "exactly one solution",
    "exactly two solutions",
    "infinitely many solutions",
    "no such number",
    "\\text{no solution}",
    "0",
    "1",
    "2",
]
_HEDGES = [
    _CASES_LISTED,
    "So the system has either no solutions or infinitely many solutions.",
    "The answer is 4, 5, 6, 0, 1, 2, yes, no solution.",
    "It could be 1, 2, or 0, depending on the case.",
    "The answer is either 1 or 2.",
    "The answer is 1. Hmm, or maybe 2.",
    "So the answer is $\\boxed{1}$ or $\\boxed{2}$.",
    "$\\boxed{1}$ (or equivalently $\\boxed{2}$)",
    "Possible answers: $\\boxed{0}$, $\\boxed{2}$.",
]


@pytest.mark.parametrize("hedge", _HEDGES)
async def test_hedges_are_paid_under_no_reference(math_grader: MathGrader, hedge: str) -> None:
    samples = [Sample(response="We study each case.\n" + hedge, label=label) for label in _WORD_REFERENCES]
    paid = [s.label for s, r in zip(samples, await math_grader.score(samples), strict=True) if r.score]
    assert paid == []


@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        # One stated answer beside each hedge is still paid.
        ("infinitely many solutions", "In every case, there are infinitely many solutions.", 1.0),
        ("2", "So the answer is $\\boxed{2}$.", 1.0),
        ("2", "So the answer is $\\boxed{1}$. Wait, that's wrong: recomputing gives $\\boxed{2}$.", 1.0),
        ("(2, 3)", "Hence $\\boxed{x=2}$ and $\\boxed{y=3}$.", 1.0),  # one box per unknown
        ("yes", "Yes, it is possible for every n.", 1.0),
        ("yes", "Yes or no, depending on n.", 0.0),
        ("no", "Yes or no, depending on n.", 0.0),
        ("\\text{Tuesday}", "The answer is Monday or Tuesday.", 0.0),
        # A list reference answered by that list is not a hedge.
        ("1, 2", "The solutions are $x = 1$ or $x = 2$.", 1.0),
        ("1, 2", "The answer is either 1 or 2.", 1.0),
        ("x < -2 \\text{ or } x > 3", "The answer is $x<-2 \\text{ or } x>3$.", 1.0),
    ],
)
async def test_single_answers_beside_hedges(
    math_grader: MathGrader, label: str, response: str, expected: float
) -> None:
    assert await _score(math_grader, label, response) == expected


# -- 5: long chain-of-thought, and responses cut off ----------------------------------------------
def _long_thinking(size: int, wrong: str) -> str:
    step = (
        "Let me reconsider the constraint: $a + b = 17$ and $ab = 60$, so the roots are 5 and 12. "
        f"So the answer might be $\\boxed{{{wrong}}}$. Wait, that's wrong; the second case adds 4. "
    )
    return step * (size // len(step) + 1)


@pytest.mark.parametrize("size", [5_000, 30_000, 100_000])
@pytest.mark.parametrize("tags", [True, False])
async def test_long_chain_of_thought_commits_to_its_final_answer(
    math_grader: MathGrader, size: int, tags: bool
) -> None:
    thinking = _long_thinking(size, "21")
    final = "So the final answer is $\\boxed{16}$. In words: sixteen."
    response = f"<think>{thinking}</think>\n{final}" if tags else f"{thinking}\n\n{final}"
    results = await math_grader.score(
        [Sample(response=response, label="16"), Sample(response=response, label="21")]
    )
    assert [r.score for r in results] == [1.0, 0.0]


@pytest.mark.parametrize(
    "response",
    [
        "<think>" + _long_thinking(20_000, "16") + " so the total is 16 and then",  # thinking never closed
        _long_thinking(20_000, "7") + " The sum is 16 so far, and then",  # stops mid-sentence
        _long_thinking(5_000, "7") + " Now we compute 16 +",
        "Let me compute.\n```python\nprint(4 * 4)\n```\n```output\n16\n```\n",  # stops on a tool's output
        "Let me compute.\n```python\nx = 16\nprint(x",  # inside an unclosed code block
    ],
)
async def test_cut_off_responses_are_wrong_and_flagged(math_grader: MathGrader, response: str) -> None:
    [result] = await math_grader.score([Sample(response=response, label="16")])
    assert result.status == Status.OK and result.score == 0.0
    assert result.logs["math/format_error"] == 1.0 and result.logs["math/undecided"] == 1.0


_TOOL = "We compute with Python.\n```python\nprint(9 * 2)\n```\n```output\n18\n```\n"


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        # Finished responses without an answer phrase still answer.
        ("Janet has 16 - 3 - 4 = 9 eggs left, so she makes 9 * 2 = $18", 1.0),
        (
            _TOOL + "She makes 18 dollars.",
            1.0,
        ),
        (
            _TOOL + "The answer is $\\boxed{17}$.",
            0.0,
        ),
    ],
)
async def test_finished_responses_are_not_cut_off(
    math_grader: MathGrader, response: str, expected: float
) -> None:
    assert await _score(math_grader, "18", response) == expected
