"""Probe cases in the styles of public math-grader suites (hand-written, not copied).

(category, reference, response, is_correct): whole model outputs for MATH, GSM8K, AIME,
AMC and olympiad problems, boxed and unboxed, in Minerva, lighteval, GSM8K and chat styles,
with negatives beside the positives.
"""

from __future__ import annotations

PROBES: list[tuple[str, str, str, bool]] = []


def minerva(answer: str) -> str:
    return f"We compute carefully.\nFinal Answer: The final answer is ${answer}$. I hope it is correct."


def light(answer: str) -> str:
    return f"Combining the steps above gives the value.\n\n**Final Answer**\n\\[\n\\boxed{{{answer}}}\n\\]"


def boxed(answer: str) -> str:
    return f"Putting it together, the answer is $\\boxed{{{answer}}}$."


def gsm(answer: str) -> str:
    return f"She buys 3 packs of 4, that is 12 items, and pays 2 each.\n#### {answer}"


def p(category: str, reference: str, response: str, expected: bool) -> None:
    PROBES.append((category, reference, response, expected))


def each(category: str, reference: str, rows: list[tuple[str, bool]]) -> None:
    """Every row in four wrappers (boxed, Minerva, lighteval, plain sentence)."""
    for answer, expected in rows:
        p(category, reference, boxed(answer), expected)
        p(category, reference, minerva(answer), expected)
        p(category, reference, light(answer), expected)


# -- integers and separators -----------------------------------------------------------------
each("integer", "204", [("204", True), ("204.", True), ("205", False), ("2\\,04", False)])
each(
    "thousands",
    "12480",
    [("12,480", True), ("12,\\!480", True), ("12{,}480", True), ("12\\,480", True), ("1248", False)],
)
each("thousands", "1,234", [("1234", True), ("1,234", True), ("1,243", False)])
p("thousands", "1,2,3,4", boxed("1,234"), False)
p("thousands", "1,2,3,4", boxed("1, 2, 3, 4"), True)
# -- GSM8K -----------------------------------------------------------------------------------
for ans, ok in [("42", True), ("$42", True), ("42.00", True), ("41", False), ("4,200", False)]:
    p("gsm8k", "42", gsm(ans), ok)
p("gsm8k", "18", "Janet sells 16 - 3 - 4 = 9 eggs at $2 each, making 9 * 2 = $<<9*2=18>>18.\n#### 18", True)
p("gsm8k", "18", "Janet sells 16 - 3 - 4 = 9 eggs at $2 each, making 9 * 2 = $<<9*2=18>>18.\n#### 9", False)
p("gsm8k", "5", "He ran 3 miles on Monday and 2 on Tuesday, so he ran 5 miles in total.", True)
p("gsm8k", "5", "He ran 3 miles on Monday and 2 on Tuesday, so he ran 6 miles in total.", False)
p("gsm8k", "70000", "The profit is 200000 - 130000 = $70,000.\nThe answer is 70000.", True)
p("gsm8k", "70000", "The profit is 200000 - 130000 = $70,000.\nThe answer is $70,000.", True)
p("gsm8k", "70000", "The answer is \\$70,000.", True)
p("gsm8k", "70000", "The answer is \\$7,000.", False)
p("gsm8k", "3", "Therefore, the train arrives 3 hours later.", True)
p("gsm8k", "3", "Therefore, the train arrives 4 hours later.", False)
p("gsm8k", "56", "Priya has 56 stickers in total.", True)
p("gsm8k", "56", "Priya has 65 stickers in total.", False)
p("gsm8k", "3", "There are three solutions.", True)
p("gsm8k", "3", "There are four solutions.", False)
p("gsm8k", "2", "So Tom needs two more boxes.", True)
p("gsm8k", "12", "The answer is twelve.", True)
p("gsm8k", "12", "The answer is eleven.", False)
p("gsm8k", "160", "Each ticket costs $8 and 20 people go, so the total is 8 x 20 = $160.", True)
p("gsm8k", "160", "Each ticket costs $8 and 20 people go, so the total is 8 x 20 = $180.", False)
p("gsm8k", "25", "25% of the students walk. The answer is 25%.", True)
p("gsm8k", "7.5", "She earns 15/2 = 7.5 dollars per hour.\n#### 7.5", True)
p("gsm8k", "7.5", "She earns 15/2 = 7.5 dollars per hour.\n#### 7.50", True)
p("gsm8k", "7.5", "She earns 15/2 = 7.5 dollars per hour.\n#### 75", False)
# -- fractions, mixed numbers, decimals ------------------------------------------------------
each(
    "fraction",
    "\\frac{3}{4}",
    [
        ("\\frac34", True),
        ("\\dfrac{3}{4}", True),
        ("3/4", True),
        ("0.75", True),
        ("\\tfrac{6}{8}", True),
        ("\\frac{4}{3}", False),
        ("0.7", False),
    ],
)
each(
    "mixed",
    "\\frac{5}{2}",
    [("2\\frac{1}{2}", True), ("2 \\frac{1}{2}", True), ("2.5", True), ("2\\frac{1}{3}", False)],
)
each(
    "mixed",
    "2\\frac{1}{2}",
    [("\\frac{5}{2}", True), ("5/2", True), ("2.5", True), ("\\frac{2}{2}", False), ("1", False)],
)
each("decimal", "0.\\overline{3}", [("\\frac{1}{3}", True), ("0.\\overline{3}", True), ("0.3", False)])
each(
    "decimal",
    "\\frac{1}{3}",
    [("0.\\overline{3}", True), ("0.333\\ldots", True), ("0.\\bar{3}", True), ("0.3", False)],
)
each("decimal", "\\frac{4}{11}", [("0.\\overline{36}", True), ("0.\\overline{63}", False)])
each("rounding", "3.75", [("3.75", True), ("3.753", False), ("3.7", False)])
each("rounding", "0.67", [("\\frac{2}{3}", False), ("0.67", True), ("0.6667", False), ("0.68", False)])
each("rounding", "1.41", [("\\sqrt{2}", False), ("1.414", False), ("1.42", False)])
each("rounding", "\\sqrt{2}", [("1.41", False), ("1.4142135623730951", True)])
# -- percent, scientific, money --------------------------------------------------------------
each("percent", "25", [("25\\%", True), ("25", True), ("26\\%", False)])
each("percent", "25\\%", [("25", True), ("25\\%", True), ("0.25", False), ("35\\%", False)])
p("percent", "\\frac{1}{4}", boxed("\\frac{1}{4}, \\text{ or } 25\\%"), True)
p("percent", "\\frac{1}{4}", "The probability is $\\frac{1}{4}$, or $25\\%$.", True)
p("percent", "\\frac{1}{4}", "The probability is $\\frac{1}{3}$, or about $33\\%$.", False)
each(
    "scientific",
    "3.2\\times10^{5}",
    [
        ("320000", True),
        ("320{,}000", True),
        ("3.2 \\times 10^5", True),
        ("3.2\\cdot 10^{5}", True),
        ("3.2e5", True),
        ("3.2 \\times 10^{6}", False),
    ],
)
each("money", "18.90", [("\\$18.90", True), ("18.9", True), ("\\$18.09", False)])
each("money", "5", [("\\$5", True), ("5\\text{ dollars}", True), ("\\$5.00", True), ("\\$50", False)])
# -- units, degrees, pi ----------------------------------------------------------------------
each(
    "units",
    "250",
    [
        ("250 \\text{ liters}", True),
        ("250\\,\\mathrm{L}", True),
        ("250\\text{ mL}", True),
        ("25 \\text{ liters}", False),
    ],
)
each(
    "units",
    "18",
    [
        ("18\\,\\mathrm{km}", True),
        ("18 \\text{ km/h}", True),
        ("18\\text{ cm}^2", True),
        ("18 \\text{ square units}", True),
        ("81 \\text{ km}", False),
    ],
)
each(
    "degrees",
    "30",
    [
        ("30^\\circ", True),
        ("30^{\\circ}", True),
        ("30°", True),
        ("30 \\text{ degrees}", True),
        ("60^\\circ", False),
    ],
)
each(
    "degrees",
    "120^\\circ",
    [("120", True), ("120^\\circ", True), ("\\frac{2\\pi}{3}", False), ("60^\\circ", False)],
)
each(
    "pi",
    "6\\pi",
    [("6\\pi", True), ("6 \\pi", True), ("\\pi \\cdot 6", True), ("18.85", False), ("3\\pi", False)],
)
each(
    "pi",
    "\\frac{\\pi}{3}",
    [("\\frac{1}{3}\\pi", True), ("\\pi/3", True), ("60^\\circ", False), ("\\frac{\\pi}{6}", False)],
)
each(
    "pi",
    "36\\pi",
    [("36\\pi \\text{ cm}^3", True), ("36\\pi\\ \\text{cubic inches}", True), ("12\\pi", False)],
)
# -- radicals --------------------------------------------------------------------------------
each(
    "radical",
    "2\\sqrt{3}",
    [
        ("\\sqrt{12}", True),
        ("2\\sqrt3", True),
        ("2 \\sqrt{3}", True),
        ("\\sqrt{3}\\cdot 2", True),
        ("3\\sqrt{2}", False),
        ("\\sqrt{6}", False),
    ],
)
each(
    "radical",
    "\\frac{\\sqrt{3}}{2}",
    [
        ("\\frac{1}{2}\\sqrt{3}", True),
        ("\\frac{\\sqrt3}2", True),
        ("\\sqrt{3}/2", True),
        ("\\frac{\\sqrt{2}}{2}", False),
    ],
)
each("radical", "\\frac{1}{\\sqrt{2}}", [("\\frac{\\sqrt{2}}{2}", True), ("\\frac{\\sqrt{2}}{4}", False)])
each("radical", "3+2\\sqrt{2}", [("2\\sqrt{2}+3", True), ("(1+\\sqrt2)^2", True), ("3-2\\sqrt{2}", False)])
each("radical", "\\sqrt[3]{2}", [("2^{1/3}", True), ("2^{\\frac{1}{3}}", True), ("\\sqrt{2}", False)])
# -- symbolic, equations ---------------------------------------------------------------------
each("symbolic", "x^2+2x+1", [("(x+1)^2", True), ("x^2 + 2x + 1", True), ("(x-1)^2", False)])
each(
    "symbolic",
    "2x+3",
    [("y = 2x + 3", True), ("2x+3", True), ("f(x) = 2x+3", True), ("y = 2x - 3", False), ("3+2x", True)],
)
each("symbolic", "y=2x+3", [("2x+3", True), ("y=3+2x", True), ("y = 2x+4", False)])
each("equation", "5", [("x=5", True), ("x = 5", True), ("n=5", True), ("x=6", False)])
each("equation", "x=5", [("5", True), ("x = 5", True), ("5.0", True), ("-5", False)])
each(
    "symbolic",
    "1",
    [("\\sin^2\\theta+\\cos^2\\theta = 1", True), ("\\sin^2 x + \\cos^2 x", True), ("2", False)],
)
each(
    "symbolic",
    "\\frac{1}{2}\\ln 2",
    [("\\ln\\sqrt{2}", True), ("\\frac{\\ln 2}{2}", True), ("\\ln 2", False)],
)
each("symbolic", "e^{2}", [("e^2", True), ("\\exp(2)", True), ("2e", False)])
each(
    "symbolic",
    "\\binom{10}{3}",
    [
        ("120", True),
        ("\\binom{10}{3}", True),
        ("{10 \\choose 3}", True),
        ("{10 \\choose 4}", False),
        ("720", False),
    ],
)
each("symbolic", "5!", [("120", True), ("5!", True), ("24", False)])
each("symbolic", "\\log_2 8", [("3", True), ("\\log_{2}8", True), ("8", False)])
# -- intervals, inequalities -----------------------------------------------------------------
each(
    "interval",
    "[1,4)",
    [
        ("[1,4)", True),
        ("x \\in [1, 4)", True),
        ("1 \\le x < 4", True),
        ("1 \\leq x < 4", True),
        ("\\left[1, 4\\right)", True),
        ("[1,4]", False),
        ("(1,4)", False),
    ],
)
each(
    "interval",
    "(-\\infty,-2)\\cup(3,\\infty)",
    [
        ("(-\\infty, -2) \\cup (3, \\infty)", True),
        ("x<-2 \\text{ or } x>3", True),
        ("(-\\infty,-2]\\cup(3,\\infty)", False),
        ("(-2,3)", False),
    ],
)
each(
    "interval",
    "[-2,2]",
    [
        ("|x| \\le 2", True),
        ("-2 \\le x \\le 2", True),
        ("[-2, 2]", True),
        ("|x| < 2", False),
        ("(-2,2)", False),
    ],
)
each(
    "interval",
    "(0,\\infty)",
    [("(0, \\infty)", True), ("x>0", True), ("(0,+\\infty)", True), ("[0,\\infty)", False)],
)
each(
    "inequality",
    "x > 3",
    [("x>3", True), ("3 < x", True), ("(3,\\infty)", True), ("x \\geq 3", False), ("x<3", False)],
)
# -- sets, multiple answers ------------------------------------------------------------------
each(
    "set",
    "\\{2, 7\\}",
    [
        ("\\{2,7\\}", True),
        ("2, 7", True),
        ("7, 2", True),
        ("\\{7, 2\\}", True),
        ("2, 8", False),
        ("2", False),
    ],
)
each(
    "multi",
    "1, 6",
    [
        ("x = 1 \\text{ or } x = 6", True),
        ("1, 6", True),
        ("6,1", True),
        ("x=1, x=6", True),
        ("1", False),
        ("1, 5", False),
    ],
)
each("multi", "-3, 3", [("\\pm 3", True), ("x = \\pm 3", True), ("3", False)])
p("multi", "1, 6", "The solutions are $x = 1$ and $x = 6$.", True)
p("multi", "1, 6", "The roots are \\boxed{1} and \\boxed{6}.", True)
p("multi", "1, 6", "The roots are \\boxed{1} and \\boxed{5}.", False)
p("multi", "2, 3", "(a) The first part gives $\\boxed{2}$. (b) The second gives $\\boxed{3}$.", True)
p("multi", "2, 3", "(a) The first part gives $\\boxed{3}$. (b) The second gives $\\boxed{2}$.", False)
# -- tuples, vectors, matrices ---------------------------------------------------------------
each(
    "tuple",
    "(3, -1)",
    [
        ("(3,-1)", True),
        ("\\left(3, -1\\right)", True),
        ("(x,y) = (3,-1)", True),
        ("(-1,3)", False),
        ("(3, 1)", False),
    ],
)
each("tuple", "(a,b)=(4,9)", [("(4,9)", True), ("(4, 9)", True), ("(9,4)", False)])
each(
    "matrix",
    "\\begin{pmatrix} 1 \\\\ -2 \\\\ 3 \\end{pmatrix}",
    [
        ("\\begin{pmatrix}1\\\\-2\\\\3\\end{pmatrix}", True),
        ("\\begin{pmatrix} 1 \\\\ 2 \\\\ 3 \\end{pmatrix}", False),
        ("(1,-2,3)", True),
    ],
)
each(
    "matrix",
    "\\begin{pmatrix} 2 & 0 \\\\ 0 & 2 \\end{pmatrix}",
    [
        ("\\begin{pmatrix}2&0\\\\0&2\\end{pmatrix}", True),
        ("\\begin{bmatrix} 2 & 0 \\\\ 0 & 2 \\end{bmatrix}", True),
        ("\\begin{pmatrix} 0 & 2 \\\\ 2 & 0 \\end{pmatrix}", False),
    ],
)
each(
    "matrix",
    "\\begin{pmatrix} 1/2 \\\\ 3 \\end{pmatrix}",
    [
        ("\\begin{pmatrix} \\frac{1}{2} \\\\ 3 \\end{pmatrix}", True),
        ("\\begin{pmatrix} 0.5 \\\\ 3 \\end{pmatrix}", True),
        ("\\begin{pmatrix} 2 \\\\ 3 \\end{pmatrix}", False),
    ],
)
# -- bases, complex --------------------------------------------------------------------------
each("base", "1011_2", [("1011_2", True), ("1011_{2}", True), ("1011", True), ("1101_2", False)])
each("base", "11", [("11", True), ("1011_2", False)])
each("complex", "3-4i", [("3 - 4i", True), ("-4i+3", True), ("3+4i", False)])
each(
    "complex",
    "\\frac{1}{2}+\\frac{\\sqrt{3}}{2}i",
    [("\\frac{1+i\\sqrt3}{2}", True), ("\\frac12 - \\frac{\\sqrt3}2 i", False)],
)
# -- text answers, special -------------------------------------------------------------------
each(
    "text",
    "\\text{Monday}",
    [("\\text{Monday}", True), ("Monday", True), ("\\textbf{Monday}", True), ("\\text{Tuesday}", False)],
)
each(
    "text",
    "\\text{no solution}",
    [("\\text{no solution}", True), ("\\text{No solution}", True), ("\\emptyset", False), ("0", False)],
)
each("text", "\\text{infinitely many}", [("\\text{infinitely many}", True), ("\\infty", False), ("1", False)])
each(
    "text",
    "\\text{odd}",
    [("\\text{odd}", True), ("odd", True), ("\\text{even}", False), ("\\text{neither}", False)],
)
p("text", "\\text{Monday}", "Counting forward 100 days, the day will be a Monday.", True)
p("text", "\\text{Monday}", "Counting forward 100 days, the day will be a Tuesday.", False)
each(
    "text",
    "\\text{(C)}",
    [("\\text{(C)}", True), ("C", True), ("(C)", True), ("\\textbf{(C)}", True), ("D", False)],
)
# -- multiple choice -------------------------------------------------------------------------
for resp, ok in [
    ("The answer is (B).", True),
    ("Answer: B", True),
    ("$\\boxed{\\textbf{(B)}\\ 12}$", True),
    ("$\\boxed{\\text{(B) } 12}$", True),
    ("The answer is B, because A and C both fail.", True),
    ("It cannot be D. The answer is B.", True),
    ("答案是 B，不是 A", True),
    ("The answer is (C).", False),
    ("B is wrong, so the answer is D.", False),
    ("$\\boxed{\\textbf{(D)}\\ 15}$", False),
]:
    p("choice", "B", resp, ok)
p("choice", "(C) 12 meters", "The answer is C.", True)
p("choice", "(C) 12 meters", "The answer is 12 meters.", True)
p("choice", "(C) 12 meters", "The answer is (A).", False)
p("choice", "A. Paris", "The capital is Paris, so the answer is A.", True)
p("choice", "A. Paris", "The answer is B.", False)
# -- equality chains and approximations ------------------------------------------------------
each("chain", "9", [("y = 2+3+4 = 9", True), ("2+3+4=9", True), ("2+3+4 = 10", False)])
each("chain", "7", [("x = 3+4 = 8", False), ("3+4=7", True)])
each(
    "approx",
    "\\frac{2}{7}",
    [
        ("\\frac{2}{7} \\approx 0.29", True),
        ("\\frac{2}{7}\\approx 0.2857", True),
        ("\\frac{3}{7} \\approx 0.43", False),
    ],
)
p("approx", "\\frac{2}{7} \\approx 0.29", boxed("\\frac{2}{7}"), True)
p("approx", "\\frac{2}{7} \\approx 0.29", boxed("\\frac{3}{7}"), False)
# -- AIME-style and olympiad text ------------------------------------------------------------
p("aime", "073", "Thus $m+n = 73$, and the answer is $\\boxed{073}$.", True)
p("aime", "73", "Thus $m+n = \\boxed{073}$.", True)
p("aime", "073", "Thus $m+n = \\boxed{37}$.", False)
p("aime", "204", "So the remainder when $N$ is divided by $1000$ is $\\boxed{204}$.", True)
p("aime", "204", "So the remainder when $N$ is divided by $1000$ is $\\boxed{240}$.", False)
p("olympiad", "2", "Hence the minimum value is $2$, attained at $x=1$.", True)
p("olympiad", "2", "Hence the minimum value is $3$, attained at $x=2$.", False)
p("olympiad", "\\frac{1}{2^{98}}", "so the sum equals $\\boxed{\\frac{1}{2^{98}}}$", True)
p("olympiad", "\\frac{1}{2^{98}}", "so the sum equals $\\boxed{\\frac{1}{2^{99}}}$", False)
p("olympiad", "k=17", "Final Answer: The smallest possible value of $k$ is 17.", True)
p("olympiad", "17", "Final Answer: The smallest possible value of $k$ is 71.", False)
p("think", "12", "<think>Maybe 13? No, recount: 12.</think>\nThe answer is $\\boxed{12}$.", True)
p("think", "12", "<think>Maybe 12? No.</think>\nThe answer is $\\boxed{13}$.", False)
p("escape", "\\frac{1}{2}", "The answer is $\\\\boxed{\\\\frac{1}{2}}$.", True)
p("escape", "\\frac{1}{2}", "The answer is $\\\\boxed{\\\\frac{1}{3}}$.", False)
p("latex", "\\frac{1}{2}", "Therefore the probability is \\(\\frac{1}{2}\\).", True)
p("latex", "\\frac{1}{2}", "Therefore the probability is \\[\\frac{1}{3}.\\]", False)
p("latex", "10", "The area is $\\boxed{10 \\text{ square units}}$", True)
p("latex", "-\\frac{1}{3}", "$$\\boxed{-\\dfrac{1}{3}}$$", True)
p("latex", "-\\frac{1}{3}", "$$\\boxed{\\dfrac{1}{3}}$$", False)
