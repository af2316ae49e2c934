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


# -- round 2: chat-style outputs, GSM8K variants, sets, equations, choices, noise ---------------
# Minerva style with various answers
for ref, ans, ok in [  # Minerva and lighteval wrappers around each answer
    ("\\frac{1}{6}", "\\frac16", True),
    ("\\frac{1}{6}", "1/6", True),
    ("\\frac{1}{6}", "\\frac{1}{5}", False),
    ("-\\frac{7}{2}", "-3.5", True),
    ("-\\frac{7}{2}", "3.5", False),
    ("10\\%", "10", True),
    ("10\\%", "0.1", False),
    ("\\$1.50", "1.50", True),
    ("\\$1.50", "1.5", True),
    ("\\$1.50", "15", False),
    ("2\\sqrt{5}", "\\sqrt{20}", True),
    ("2\\sqrt{5}", "4.47", False),
    ("x^2-4", "(x-2)(x+2)", True),
    ("x^2-4", "(x-2)^2", False),
    ("\\begin{pmatrix} 3 \\\\ 1 \\end{pmatrix}", "\\begin{pmatrix}3\\\\1\\end{pmatrix}", True),
    ("\\begin{pmatrix} 3 \\\\ 1 \\end{pmatrix}", "\\begin{pmatrix}1\\\\3\\end{pmatrix}", False),
    ("(-\\infty, 5]", "(-\\infty,5]", True),
    ("(-\\infty, 5]", "x \\le 5", True),
    ("(-\\infty, 5]", "x < 5", False),
    ("\\{1,3\\}", "1,3", True),
    ("\\{1,3\\}", "3, 1", True),
    ("\\{1,3\\}", "1", False),
    ("3", "3 \\text{ inches}", True),
    ("3", "3\\text{ in.}", True),
    ("5\\sqrt{2}", "5\\sqrt2", True),
    ("5\\sqrt{2}", "\\sqrt{50}", True),
    ("5\\sqrt{2}", "5", False),
    ("\\text{E}", "\\text{(E)}", True),
    ("\\text{E}", "(E)", True),
    ("\\text{E}", "\\text{(D)}", False),
    ("0.5", "\\frac{1}{2}", True),
    ("0.5", "50\\%", False),
    ("1.5 \\times 10^{-3}", "0.0015", True),
    ("1.5 \\times 10^{-3}", "1.5 \\times 10^{-4}", False),
    ("1.5 \\times 10^{-3}", "1.5\\text{e-}3", True),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt2}", True),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{\\sqrt{3}}{2}", False),
    ("90^\\circ", "90", True),
    ("90^\\circ", "\\frac{\\pi}{2}", False),
    ("\\frac{\\pi}{2}", "90^\\circ", False),
    ("8", "2^3", True),
    ("8", "2^4", False),
    ("(1,2)", "(1, 2)", True),
    ("(1,2)", "[1,2]", False),
    ("(1,2)", "(2,1)", False),
]:
    p("minerva2", ref, f"Final Answer: The final answer is ${ans}$. I hope it is correct.", ok)
    p("box2", ref, f"**Final Answer**\n\n$\\boxed{{{ans}}}$", ok)
# Chatty model outputs
p(
    "chat",
    "27",
    "Let's think step by step.\n\n1. The cube has side 3.\n2. Its volume is $3^3 = 27$.\n\n"
    "So, the volume of the cube is **27** cubic units.",
    True,
)
p(
    "chat",
    "27",
    "Let's think step by step.\n\n1. The cube has side 3.\n2. Its volume is $3^3 = 9$.\n\n"
    "So, the volume of the cube is **9** cubic units.",
    False,
)
p("chat", "6", "The number of ways is $\\binom{4}{2} = 6$.", True)
p("chat", "6", "The number of ways is $\\binom{4}{2} = 8$.", False)
p(
    "chat",
    "\\frac{5}{12}",
    "The probability that the sum is a prime is $\\frac{15}{36} = \\frac{5}{12}$.",
    True,
)
p(
    "chat",
    "\\frac{5}{12}",
    "The probability that the sum is a prime is $\\frac{15}{36} = \\frac{5}{13}$.",
    False,
)
p("chat", "15", "Answer: 15", True)
p("chat", "15", "Answer: $15$ dollars", True)
p("chat", "15", "ANSWER: 16", False)
p("chat", "15", "The final answer is: $\\boxed{15}$", True)
p("chat", "15", "The final answer is: $\\boxed{51}$", False)
p("chat", "15", "## Step 3: Conclude\nThe total is 15.\n\nThe final answer is: $\\boxed{15}$", True)
p(
    "chat",
    "-2",
    "## Step 1\nSolve $2x + 4 = 0$.\n## Step 2\n$x = -2$.\n\nThe final answer is: $\\boxed{-2}$",
    True,
)
p(
    "chat",
    "-2",
    "## Step 1\nSolve $2x + 4 = 0$.\n## Step 2\n$x = 2$.\n\nThe final answer is: $\\boxed{2}$",
    False,
)
p("chat", "4", "Therefore, $\\boxed{x=4}$.", True)
p("chat", "4", "Therefore, $\\boxed{x=-4}$.", False)
p("chat", "2", "The answer is $\\boxed{2}$ (since $f(2)=0$).", True)
p("chat", "\\frac{3}{5}", "So $\\cos\\theta = \\boxed{\\frac35}$.", True)
p("chat", "\\frac{3}{5}", "So $\\cos\\theta = \\boxed{\\frac45}$.", False)
p("chat", "100", "So the answer is 100%.", True)
p("chat", "12", "Thus, there are 12 ways.", True)
p("chat", "12", "Thus, there are 21 ways.", False)
p("chat", "12", "There are $\\boxed{12}$ ways to arrange them, since $4! / 2 = 12$.", True)
p("chat", "7", "The remainder is 7 when divided by 9.", True)
p("chat", "7", "The remainder is 8 when divided by 9.", False)
p("chat", "50", "It costs $50.", True)
p("chat", "50", "It costs \\$50.", True)
p("chat", "50", "It costs $5.", False)
p("chat", "8", "He needs eight more.", True)
p("chat", "8", "He needs nine more.", False)
p("chat", "25", "Twenty-five students passed.", True)
p("chat", "25", "Twenty-four students passed.", False)
p("chat", "\\text{Sunday}", "The meeting falls on a **Sunday**.", True)
p("chat", "\\text{Sunday}", "The meeting falls on a **Saturday**.", False)
p("chat", "\\text{Alice}", "Therefore Bob wins the game.", False)
p("chat", "\\text{yes}", "Yes, it is possible.", True)
p("chat", "\\text{no}", "No, it is not possible.", True)
p("chat", "\\text{no}", "Yes, it is possible.", False)
# GSM8K variants
p("gsm2", "1,200", "Total = 1200\n#### 1200", True)
p("gsm2", "1200", "Total = 1,200\n#### 1,200", True)
p("gsm2", "1200", "#### $1,200", True)
p("gsm2", "1200", "#### 120", False)
p("gsm2", "0.5", "#### .5", True)
p("gsm2", "-3", "#### -3", True)
p("gsm2", "-3", "#### 3", False)
p("gsm2", "18", "The answer is 18.\n#### 18", True)
p("gsm2", "18", "<<3*6=18>> so 18 eggs. The answer is: 18", True)
p("gsm2", "18", "He has 18 eggs. The answer is: 81", False)
# intervals/sets/inequalities round 2
p("int2", "(-3, 2)", "$\\boxed{-3 < x < 2}$", True)
p("int2", "(-3, 2)", "$\\boxed{-3 \\le x < 2}$", False)
p("int2", "[2, \\infty)", "$\\boxed{x \\geq 2}$", True)
p("int2", "[2, \\infty)", "$\\boxed{[2, +\\infty)}$", True)
p("int2", "[2, \\infty)", "$\\boxed{(2, \\infty)}$", False)
p("int2", "(-\\infty, -1) \\cup (1, \\infty)", "$\\boxed{|x| > 1}$", True)
p("int2", "(-\\infty, -1) \\cup (1, \\infty)", "$\\boxed{|x| \\ge 1}$", False)
p("int2", "x \\in (-\\infty, 0) \\cup (0, \\infty)", "$\\boxed{x \\neq 0}$", True)
p("int2", "\\mathbb{R}", "$\\boxed{(-\\infty, \\infty)}$", True)
p("int2", "\\mathbb{R}", "$\\boxed{\\text{all real numbers}}$", True)
p("int2", "\\mathbb{R}", "$\\boxed{(0, \\infty)}$", False)
p("set2", "\\{-1, 0, 1\\}", "$\\boxed{\\{0, 1, -1\\}}$", True)
p("set2", "\\{-1, 0, 1\\}", "$\\boxed{-1, 0, 1}$", True)
p("set2", "\\{-1, 0, 1\\}", "$\\boxed{\\{-1, 1\\}}$", False)
p("set2", "\\emptyset", "$\\boxed{\\varnothing}$", True)
p("set2", "\\emptyset", "$\\boxed{\\{\\}}$", True)
p("set2", "\\emptyset", "$\\boxed{\\{0\\}}$", False)
p("set2", "1, -\\frac{1}{2}", "The solutions are $x=1$ and $x=-\\frac12$.", True)
p("set2", "1, -\\frac{1}{2}", "The solutions are $x=1$ and $x=\\frac12$.", False)
# equations as answers
p("eq2", "y = -\\frac{1}{2}x + 3", "$\\boxed{y = -\\frac{x}{2} + 3}$", True)
p("eq2", "y = -\\frac{1}{2}x + 3", "$\\boxed{y = -\\frac{x}{2} - 3}$", False)
p("eq2", "x^2 + y^2 = 25", "$\\boxed{x^2+y^2=25}$", True)
p("eq2", "x^2 + y^2 = 25", "$\\boxed{y^2 + x^2 = 25}$", True)
p("eq2", "x^2 + y^2 = 25", "$\\boxed{x^2+y^2=5}$", False)
p("eq2", "2x - 3y = 6", "$\\boxed{-2x + 3y = -6}$", True)
p("eq2", "2x - 3y = 6", "$\\boxed{y = \\frac{2}{3}x - 2}$", True)
p("eq2", "2x - 3y = 6", "$\\boxed{y = \\frac{2}{3}x + 2}$", False)
p("eq2", "3", "$\\boxed{a = 3}$", True)
p("eq2", "3", "$\\boxed{a + b = 3}$", False)
p("eq2", "f(x) = x^2", "$\\boxed{x^2}$", True)
# scientific, percent, money round 2
p("num2", "6.02 \\times 10^{23}", "$\\boxed{6.02\\times10^{23}}$", True)
p("num2", "6.02 \\times 10^{23}", "$\\boxed{6.02 \\times 10^{22}}$", False)
p("num2", "0.035", "$\\boxed{3.5\\%}$", False)
p("num2", "3.5\\%", "$\\boxed{3.5\\%}$", True)
p("num2", "3.5\\%", "$\\boxed{3.5}$", True)
p("num2", "45", "$\\boxed{45\\text{ minutes}}$", True)
p("num2", "45", "$\\boxed{45 \\mbox{ min}}$", True)
p("num2", "45", "$\\boxed{54\\text{ minutes}}$", False)
p("num2", "2.25", "$\\boxed{\\$2.25}$", True)
p("num2", "2.25", "$\\boxed{2.25\\text{ dollars}}$", True)
p("num2", "2.25", "$\\boxed{225\\text{ cents}}$", False)
p("num2", "1000", "$\\boxed{1{,}000}$", True)
p("num2", "1000", "$\\boxed{1\\,000}$", True)
p("num2", "1000", "$\\boxed{10^3}$", True)
p("num2", "1000", "$\\boxed{100}$", False)
# mixed numbers and weird fractions
p("mix2", "3\\frac{1}{4}", "$\\boxed{\\frac{13}{4}}$", True)
p("mix2", "3\\frac{1}{4}", "$\\boxed{3 \\tfrac14}$", True)
p("mix2", "3\\frac{1}{4}", "$\\boxed{3.25}$", True)
p("mix2", "3\\frac{1}{4}", "$\\boxed{\\frac{3}{4}}$", False)
p("mix2", "\\frac{13}{4}", "$\\boxed{3\\frac{1}{4}}$", True)
p("mix2", "\\frac{13}{4}", "The answer is 3 1/4.", True)
p("mix2", "\\frac{13}{4}", "The answer is 3 1/3.", False)
p("mix2", "\\frac{a}{b}", "$\\boxed{a/b}$", True)
# matrices
p(
    "mat2",
    "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}",
    "$\\boxed{\\left(\\begin{array}{cc} 1 & 0 \\\\ 0 & 1 \\end{array}\\right)}$",
    True,
)
p("mat2", "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "$\\boxed{I}$", False)
p(
    "mat2",
    "\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}}$",
    True,
)
p(
    "mat2",
    "\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix} -1 & 2 \\end{pmatrix}}$",
    False,
)
p(
    "mat2",
    "\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}}$",
    False,
)
# multiple choice round 2
p("mc2", "C", "Looking at the options, (A) is too big and (B) too small. The correct option is (C).", True)
p("mc2", "C", "Looking at the options, (C) is too big and (B) too small. The correct option is (A).", False)
p("mc2", "C", "**Answer: C**", True)
p("mc2", "C", "**Answer: (C) 24**", True)
p("mc2", "C", "$\\boxed{C}$", True)
p("mc2", "C", "$\\boxed{\\text{C}}$", True)
p("mc2", "C", "$\\boxed{\\mathrm{(C)}}$", True)
p("mc2", "C", "$\\boxed{D}$", False)
p("mc2", "C", "The answer is option C.", True)
p("mc2", "C", "The answer is option D.", False)
p("mc2", "(C) 24", "$\\boxed{24}$", True)
p("mc2", "(C) 24", "$\\boxed{\\textbf{(C) } 24}$", True)
p("mc2", "(C) 24", "$\\boxed{25}$", False)
p("mc2", "\\textbf{(B) } 5", "The answer is $\\textbf{(B) } 5$.", True)
p("mc2", "\\textbf{(B) } 5", "The answer is $\\textbf{(C) } 6$.", False)
# olympiad / proofs with final answer
p("oly2", "n = 1", "Checking small cases, only $n=1$ works. Hence the answer is $\\boxed{n=1}$.", True)
p("oly2", "n = 1", "Hence the answer is $\\boxed{n=2}$.", False)
p("oly2", "f(x) = x", "Thus the only solution is $f(x) = x$ for all real $x$.", True)
p("oly2", "f(x) = x", "Thus the only solution is $f(x) = -x$ for all real $x$.", False)
p("oly2", "2^{n-1}", "The number of such subsets is $\\boxed{2^{n-1}}$.", True)
p("oly2", "2^{n-1}", "The number of such subsets is $\\boxed{2^{n}}$.", False)
p("oly2", "\\frac{n(n+1)}{2}", "$\\boxed{\\frac{n^2+n}{2}}$", True)
p("oly2", "\\frac{n(n+1)}{2}", "$\\boxed{\\binom{n+1}{2}}$", True)
p("oly2", "\\frac{n(n+1)}{2}", "$\\boxed{\\frac{n(n-1)}{2}}$", False)
p("oly2", "(2, 3), (3, 2)", "The pairs are $(2,3)$ and $(3,2)$.", True)
p("oly2", "(2, 3), (3, 2)", "$\\boxed{(3,2),(2,3)}$", True)
p("oly2", "(2, 3), (3, 2)", "$\\boxed{(2,3)}$", False)
p("oly2", "p=2, q=3", "$\\boxed{p=2, q=3}$", True)
p("oly2", "p=2, q=3", "$\\boxed{p=3, q=2}$", False)
p("oly2", "\\frac{1}{2004!}", "$\\boxed{\\frac{1}{2004!}}$", True)
p("oly2", "\\frac{1}{2004!}", "$\\boxed{\\frac{1}{2006!}}$", False)
# trig, logs, pi
p("trig2", "\\frac{\\sqrt{3}}{2}", "$\\boxed{\\sin 60^\\circ}$", True)
p("trig2", "\\frac{\\sqrt{3}}{2}", "$\\boxed{\\cos 60^\\circ}$", False)
p("trig2", "\\frac{\\pi}{4}", "$\\boxed{45^\\circ}$", False)
p("trig2", "\\frac{\\pi}{4}", "$\\boxed{\\frac{\\pi}{4}}$", True)
p("trig2", "\\frac{\\pi}{4}", "$\\boxed{\\pi/4}$", True)
p("trig2", "\\frac{\\pi}{4}", "$\\boxed{0.785}$", False)
p("trig2", "2\\pi", "$\\boxed{2 \\pi \\text{ radians}}$", True)
p("trig2", "\\log_3 5", "$\\boxed{\\frac{\\ln 5}{\\ln 3}}$", True)
p("trig2", "\\log_3 5", "$\\boxed{\\frac{\\ln 3}{\\ln 5}}$", False)
p("trig2", "e", "$\\boxed{e}$", True)
p("trig2", "e", "$\\boxed{\\exp(1)}$", True)
p("trig2", "e", "$\\boxed{2.718}$", False)
# LaTeX noise
p("noise2", "12", "$\\boxed{\\,12\\,}$", True)
p("noise2", "12", "$\\boxed{\\mathbf{12}}$", True)
p("noise2", "12", "$\\boxed{\\textbf{12}}$", True)
p("noise2", "12", "$\\boxed{ 12. }$", True)
p("noise2", "12", "\\[ \\boxed{12} \\]", True)
p("noise2", "12", "\\boxed 12", True)
p("noise2", "12", "$\\fbox{12}$", True)
p("noise2", "12", "$\\boxed{\\color{red}12}$", True)
p("noise2", "12", "$\\boxed{21}$", False)
p("noise2", "\\frac{1}{2}", "$\\boxed{\\displaystyle\\frac{1}{2}}$", True)
p("noise2", "\\frac{1}{2}", "$\\boxed{\\left.\\frac{1}{2}\\right.}$", True)
p("noise2", "\\frac{1}{2}", "$\\boxed{{\\frac{1}{2}}}$", True)
p("noise2", "\\frac{1}{2}", "$\\boxed{\\frac{1}{2}}$ or $\\boxed{\\frac13}$", False)
p("noise2", "\\sqrt{2}", "$\\boxed{\\sqrt{2}\\;}$", True)
p("noise2", "\\sqrt{2}", "$\\boxed{\\sqrt 3}$", False)


# -- round 3: normaliser styles (MATH, NeMo-Skills, AReaL, TRL), units, last-answer texts ---------
ROUND3 = [
    (
        "hend",
        "\\frac{1}{2}",
        [
            (" 1/2 ", True),
            ("\\dfrac12", True),
            ("\\frac{1}{2} \\text{ units}", True),
            ("\\frac{2}{4}", True),
            ("\\frac{1}{4}", False),
        ],
    ),
    (
        "hend",
        "5",
        [
            ("5 \\text{ cm}^2", True),
            ("5\\text{cm}^2", True),
            ("5 \\mathrm{m/s}", True),
            ("5\\ \\text{km}^2", True),
            ("5^2", False),
        ],
    ),
    (
        "hend",
        "(1,2)",
        [("\\left( 1, 2 \\right)", True), ("(1,\\ 2)", True), ("( 1 , 2 )", True), ("(1,-2)", False)],
    ),
    ("hend", "3:4", [("3:4", True), ("\\frac{3}{4}", True), ("6:8", True), ("4:3", False)]),
    ("hend", "\\$10", [("10", True), ("\\$10.00", True), ("\\$ 10", True), ("\\$100", False)]),
    ("nemo", "50\\%", [("50", True), ("50\\%", True), ("60", False)]),
    (
        "nemo",
        "\\frac{\\pi}{2}",
        [("\\frac{\\pi}{2}", True), ("\\pi/2", True), ("1.5708", False), ("\\frac{\\pi}{3}", False)],
    ),
    ("nemo", "100", [("100.0", True), ("100.00", True), ("1e2", True), ("100.1", False)]),
    ("nemo", "\\infty", [("\\infty", True), ("+\\infty", True), ("-\\infty", False)]),
    ("nemo", "a+b", [("b+a", True), ("a + b", True), ("a-b", False)]),
    ("nemo", "x\\in[0,1]", [("[0,1]", True), ("0 \\le x \\le 1", True), ("[0,1)", False)]),
    ("nemo", "\\text{Evelyn}", [("\\text{Evelyn}", True), ("Evelyn", True), ("\\text{Emily}", False)]),
    (
        "areal",
        "\\frac{\\sqrt{3}}{2}",
        [("\\frac{\\sqrt{3}}{2}", True), ("\\dfrac{\\sqrt{3}}{2}", True), ("\\frac{\\sqrt{3}}{3}", False)],
    ),
    ("areal", "-1", [("-1", True), ("{-1}", True), ("(-1)", True), ("1", False)]),
    ("areal", "2\\sqrt{2}-1", [("-1+2\\sqrt{2}", True), ("2\\sqrt2 - 1", True), ("2\\sqrt{2}+1", False)]),
    ("trl", "\\frac{63}{400}", [("\\frac{63}{400}", True), ("0.1575", True), ("\\frac{64}{400}", False)]),
    (
        "units3",
        "36",
        [
            ("36 \\text{ square feet}", True),
            ("36\\,\\text{ft}^2", True),
            ("36 \\text{ sq ft}", True),
            ("6", False),
        ],
    ),
    ("units3", "4.5", [("4.5\\text{ hours}", True), ("4\\frac{1}{2} \\text{ hours}", True), ("4.3", False)]),
    (
        "units3",
        "80",
        [
            ("80 \\text{ km/h}", True),
            ("80\\ \\mathrm{km}/\\mathrm{h}", True),
            ("80\\text{ mph}", True),
            ("8", False),
        ],
    ),
    ("approx3", "3.14", [("3.14", True), ("\\approx 3.14", True), ("3.140", True), ("3.15", False)]),
    ("eqbox", "5", [("AB = 5", True), ("BC=5", True), ("AB = 6", False)]),
    (
        "eqbox",
        "12",
        [("m\\angle ABC = 12", True), ("\\angle A = 12^\\circ", True), ("\\angle A = 21^\\circ", False)],
    ),
    (
        "neg",
        "-\\frac{1}{2}",
        [
            ("-\\frac12", True),
            ("\\frac{-1}{2}", True),
            ("\\frac{1}{-2}", True),
            ("-0.5", True),
            ("\\frac{1}{2}", False),
        ],
    ),
    ("pct3", "-20\\%", [("-20\\%", True), ("-20", True), ("20\\%", False)]),
    ("coord", "(2,-3)", [("(2, -3)", True), ("x=2, y=-3", True), ("(-3, 2)", False)]),
    ("poly", "3x^2-5x+2", [("3x^2 - 5x + 2", True), ("(3x-2)(x-1)", True), ("3x^2-5x-2", False)]),
    ("poly", "x^3+1", [("(x+1)(x^2-x+1)", True), ("x^3-1", False)]),
    (
        "frac3",
        "\\frac{x+1}{x-1}",
        [("\\frac{1+x}{x-1}", True), ("\\frac{x+1}{x+1}", False), ("-\\frac{x+1}{1-x}", True)],
    ),
    ("root3", "\\sqrt[4]{8}", [("8^{1/4}", True), ("2^{3/4}", True), ("\\sqrt{8}", False)]),
    ("big", "2^{100}", [("2^{100}", True), ("1267650600228229401496703205376", True), ("2^{99}", False)]),
    ("big", "10!", [("3628800", True), ("3,628,800", True), ("362880", False)]),
    ("cplx3", "i", [("i", True), ("\\sqrt{-1}", True), ("-i", False)]),
    ("cplx3", "1+i", [("i+1", True), ("1 + 1i", True), ("1-i", False)]),
]
for c, ref, rs in ROUND3:
    for a, ok in rs:
        p(c, ref, f"Thus the answer is $\\boxed{{{a}}}$.", ok)
# whole texts
p("last", "5", "First we got $\\boxed{4}$, but that was wrong. Correcting, the answer is $\\boxed{5}$.", True)
p(
    "last",
    "5",
    "First we got $\\boxed{5}$, but that was wrong. Correcting, the answer is $\\boxed{4}$.",
    False,
)
p("last", "5", "<think>\nThe answer might be \\boxed{4}.\n</think>\n\nThe answer is $\\boxed{5}$.", True)
p("last", "5", "Therefore, the final answer is $\\boxed{5}$. I hope it is correct.", True)
p("last", "5", "**5**", True)
p("last", "5", "The answer: **5**.", True)
p("last", "5", "The answer: **6**.", False)
p("last", "5", "x = 5", True)
p("last", "5", "$x = 5$", True)
p("last", "5", "5.", True)
p("last", "5", "5 apples", True)
p("last", "5", "6 apples", False)
p("last", "5", "So there are 5 apples left, because 8 - 3 = 5.", True)
p("last", "5", "So there are 4 apples left, because 8 - 3 = 4.", False)
p("last", "12", "Hence the perimeter of the rectangle is $2(2+4) = 12$ units.", True)
p("last", "12", "Hence the perimeter of the rectangle is $2(2+4) = 14$ units.", False)
p("last", "12", "Hence, the perimeter is $\\boxed{12 \\text{ units}}$.", True)
p("last", "\\frac{1}{3}", "The probability is $\\boxed{\\frac{1}{3}}$, which is about 33%.", True)
p("last", "\\frac{1}{3}", "The probability is $\\boxed{\\frac{1}{4}}$, which is about 33%.", False)
p("last", "\\frac{1}{3}", "The probability is $\\frac{1}{3} \\approx 0.333$.", True)
p("last", "\\frac{1}{3}", "The probability is $\\frac{1}{4} \\approx 0.333$.", False)
p("last", "8", "The answer is $2^3 = 8$.", True)
p("last", "8", "The answer is $2^3 = 9$.", False)
p("last", "8", "The answer is $8$ (since $2^3 = 8$).", True)
p("last", "8", "The answer is 8, since 2 × 4 = 8.", True)
p("last", "8", "The answer is 9, since 2 × 4 = 8.", False)
p("last", "42", "I think the answer is 42, but let me double-check... yes, 42.", True)
p("last", "42", "I think the answer is 24, but let me double-check... no, it is 42.", True)
p("last", "42", "I think the answer is 42, but let me double-check... no, it is 24.", False)
p("last", "2", "The smallest such $n$ is $n = 2$.", True)
p("last", "2", "The smallest such $n$ is $n = 3$.", False)
p("last", "3", "In total, 3 people attended the party.", True)
p("last", "3", "In 2020, 3 people attended the party.", True)
p("last", "3", "In 2020, 4 people attended the party.", False)
p("last", "1", "Since there is exactly one real root, the answer is one.", True)
p("last", "0", "There are no real solutions, so the count is zero.", True)
p("last", "0", "There are no real solutions, so the count is one.", False)
p("last", "10", "Ten.", True)
p("last", "10", "The answer is ten.", True)
p("last", "10", "The answer is eleven.", False)
p("last", "15", "答案是15。", True)
p("last", "15", "所以答案是 $\\boxed{15}$。", True)
p("last", "15", "La respuesta es 15.", True)
p("last", "15", "La réponse est 15.", True)
p("last", "15", "Die Antwort ist 15.", True)
p("last", "15", "Die Antwort ist 16.", False)


# -- round 4: hedges, currency dollars, Unicode, decimal commas, AMC options, word answers ---------
p("hedge", "3", "The answer is $\\boxed{3}$ or $\\boxed{4}$.", False)
p("hedge", "3", "The answer is 3 or 4.", False)
p("hedge", "3", "$\\boxed{3 \\text{ or } 4}$", False)
p("hedge", "3", "$\\boxed{3}$", True)
p("hedge", "3, 4", "The answers are 3 and 4.", True)
p("hedge", "3, 4", "$\\boxed{3 \\text{ and } 4}$", True)
p("hedge", "3, 4", "$\\boxed{3 \\text{ and } 5}$", False)
p("cond", "5", "When $x = 2$, we get $y = 5$.", True)
p("cond", "5", "When $x = 5$, we get $y = 2$.", False)
p("disp", "\\frac{3}{2}", "Solving gives\n\\[ x = \\frac{3}{2} \\]", True)
p("disp", "\\frac{3}{2}", "Solving gives\n\\[ x = \\frac{2}{3} \\]", False)
p("disp", "\\frac{3}{2}", "The answer is $\\frac{3}{2}$ hours.", True)
p("disp", "\\frac{3}{2}", "The answer is $\\frac{5}{2}$ hours.", False)
p("refunit", "10\\text{ inches}", "$\\boxed{10}$", True)
p("refunit", "10\\text{ inches}", "$\\boxed{10 \\text{ in}}$", True)
p("refunit", "10\\text{ inches}", "$\\boxed{12}$", False)
p("refunit", "5\\sqrt{2}\\text{ cm}", "$\\boxed{5\\sqrt{2}}$", True)
p("refunit", "5\\sqrt{2}\\text{ cm}", "$\\boxed{5\\sqrt{3}}$", False)
p("refunit", "\\$32", "$\\boxed{32}$", True)
p("refunit", "\\$32", "$\\boxed{\\$32.00}$", True)
p("refunit", "\\$32", "$\\boxed{\\$23}$", False)
p("boxtext", "5", "$\\boxed{\\text{The answer is } 5}$", True)
p("boxtext", "5", "$\\boxed{5}\\%$", True)
p("boxtext", "5", "$\\boxed{\\text{5 apples}}$", True)
p("boxtext", "5", "$\\boxed{\\text{6 apples}}$", False)
p("unicode", "-5", "The answer is −5.", True)
p("unicode", "-5", "The answer is $\\boxed{−5}$.", True)
p("unicode", "-5", "The answer is 5.", False)
p("unicode", "\\frac{1}{2}", "The answer is ½.", True)
p("unicode", "\\sqrt{3}", "The answer is √3.", True)
p("unicode", "\\sqrt{3}", "The answer is √2.", False)
p("unicode", "x^2", "The answer is x².", True)
p("unicode", "\\pi", "The answer is π.", True)
p("unicode", "2\\pi", "The answer is 2π.", True)
p("unicode", "2\\pi", "The answer is π.", False)
p("unicode", "3 \\times 10^8", "The answer is 3×10⁸.", True)
p("deccomma", "3.5", "La respuesta es 3,5.", True)
p("deccomma", "3.5", "La respuesta es 3,6.", False)
p("deccomma", "3.5", "$\\boxed{3{,}5}$", True)
p("deccomma", "1.234", "$\\boxed{1,234}$", False)
p("deccomma", "1234", "$\\boxed{1,234}$", True)
p("deccomma", "1000000", "$\\boxed{1 000 000}$", True)
p("deccomma", "1000000", "$\\boxed{1\\,000\\,000}$", True)
p("deccomma", "1000000", "$\\boxed{1\\,000\\,00}$", False)
p("pct4", "12.5", "$\\boxed{12.5\\%}$", True)
p("pct4", "12.5\\%", "$\\boxed{\\frac{1}{8}}$", False)
p("pct4", "12.5\\%", "$\\boxed{12.5 \\text{ percent}}$", True)
p("pct4", "12.5\\%", "The percentage is 12.5 percent.", True)
p("pct4", "12.5\\%", "The percentage is 15 percent.", False)
p("amc", "D", "$\\textbf{(D)}\\ 18$", True)
p("amc", "D", "$\\boxed{\\textbf{(D)}\\ 18}$", True)
p("amc", "D", "$\\boxed{\\textbf{(E)}\\ 20}$", False)
p("amc", "\\textbf{(D)}\\ 18", "$\\boxed{D}$", True)
p("amc", "\\textbf{(D)}\\ 18", "$\\boxed{18}$", True)
p("amc", "\\textbf{(D)}\\ 18", "$\\boxed{E}$", False)
p("amc", "\\textbf{(D)}\\ 18", "$\\boxed{20}$", False)
p("amc", "\\textbf{(D) }18", "So the answer is $\\boxed{\\textbf{(D) }18}$.", True)
p("amc", "\\text{(D)}", "So the answer is $\\boxed{\\textbf{(D) }18}$.", True)
p("aime4", "25", "Therefore $m + n = 16 + 9 = \\boxed{025}$.", True)
p("aime4", "25", "Therefore $m + n = 16 + 9 = \\boxed{25}$.", True)
p("aime4", "25", "Therefore $m + n = 16 + 8 = \\boxed{024}$.", False)
p("think4", "7", "<think>\nLet me compute. 3 + 4 = 7.\n</think>\n7", True)
p("think4", "7", "<think>\nLet me compute. 3 + 4 = 7.\n</think>\nThe answer is 8.", False)
p("think4", "7", "<think>\nSo it's 7\n</think>", False)
p("think4", "7", "<answer>7</answer>", True)
p("think4", "7", "<answer>\\boxed{7}</answer>", True)
p("think4", "7", "<answer>The answer is 8</answer>", False)
p("inf", "\\text{infinitely many}", "There are infinitely many solutions.", True)
p("inf", "\\text{infinitely many}", "There are two solutions.", False)
p("inf", "\\infty", "$\\boxed{\\infty}$", True)
p("inf", "\\infty", "$\\boxed{\\text{infinity}}$", True)
p("inf", "\\infty", "$\\boxed{\\text{does not exist}}$", False)
p("nosol", "\\text{no solution}", "There is no solution.", True)
p("nosol", "\\text{no solution}", "The equation has no real solutions.", True)
p("nosol", "\\text{no solution}", "The solution is $x = 2$.", False)
p("nosol", "\\text{DNE}", "$\\boxed{\\text{DNE}}$", True)
p("nosol", "\\text{DNE}", "$\\boxed{\\text{does not exist}}$", True)
p("nosol", "\\text{DNE}", "$\\boxed{0}$", False)
p("vec4", "\\langle 1, 2, 3 \\rangle", "$\\boxed{\\langle 1,2,3\\rangle}$", True)
p("vec4", "\\langle 1, 2, 3 \\rangle", "$\\boxed{(1,2,3)}$", True)
p("vec4", "\\langle 1, 2, 3 \\rangle", "$\\boxed{(3,2,1)}$", False)
p("vec4", "2\\mathbf{i} - \\mathbf{j}", "$\\boxed{2\\mathbf{i}-\\mathbf{j}}$", True)
p("vec4", "2\\mathbf{i} - \\mathbf{j}", "$\\boxed{2\\mathbf{i}+\\mathbf{j}}$", False)
p("dollar4", "15", "She saves $\\$15$ each week, so the answer is $\\$15$.", True)
p("dollar4", "15", "She pays $15 for 3 items, so each costs $5.", False)
p("dollar4", "5", "She pays $15 for 3 items, so each costs $5.", True)
p("time", "3:45", "$\\boxed{3:45 \\text{ PM}}$", True)
p("time", "3:45", "$\\boxed{4:45}$", False)


# -- round 5: negatives against the rules above (identities, restatements, words, conditions) ----
# adversarial negatives for the new rules, beside positives
p("identity", "6", "$\\boxed{x + 1 = 6}$", False)
p("identity", "5", "$\\boxed{x + 1 = 6}$", False)
p("identity", "5", "$\\boxed{x^2 - x^2 + 5 = 5}$", True)
p("identity", "2", "$\\boxed{\\sin^2 x + \\cos^2 x = 1}$", False)
p("identity", "1", "$\\boxed{\\tan x \\cot x = 1}$", True)
p("identity", "0", "$\\boxed{x - x = 0}$", True)
p("identity", "4", "$\\boxed{2x = 4}$", False)
p("restate", "\\frac{1}{4}", "$\\boxed{\\frac{1}{4}, \\text{ or } 30\\%}$", False)
p("restate", "2", "$\\boxed{2, 3}$", False)
p("restate", "2", "$\\boxed{2 \\text{ or } 2.0}$", True)
p("restate", "0.5", "The answer is $\\frac{1}{2}$, or $0.5$.", True)
p("restate", "0.5", "The answer is $\\frac{1}{3}$, or $0.5$.", False)
p("words", "1", "One of the three boxes is red, so we pick it.", False)
p("words", "200", "So there are two hundred ways.", False)
p("words", "2", "So there are two hundred ways.", False)
p("words", "21", "So there are twenty-one ways.", True)
p("words", "20", "So there are twenty-one ways.", False)
p("words", "4", "So four is the answer.", True)
p("cond5", "5", "The answer is $5$ for $n=3$.", True)
p("cond5", "3", "The answer is $5$ for $n=3$.", False)
p("cond5", "7", "The maximum is 7, achieved when x = 3.", True)
p("cond5", "3", "The maximum is 7, achieved when x = 3.", False)
p("cond5", "10", "Therefore $f(x) = 10$ for all $x$.", True)
p("cond5", "0", "The limit is $0$ as $n \\to \\infty$.", True)
p("corr", "24", "The answer is 24. No, it is 42.", False)
p("corr", "42", "The answer is 24. Actually, it's 42.", True)
p("corr", "24", "The answer is 24. Actually, it's 42.", False)
p("phrase", "\\text{infinitely many}", "There are not infinitely many solutions; there are 3.", False)
p("phrase", "\\text{no solution}", "There is a solution, namely $x=1$.", False)
p("phrase", "\\text{no solution}", "$\\boxed{\\text{no solution}}$", True)
p("phrase", "\\text{no solution}", "Hence the system has no solutions.", True)
p("money5", "15", "She pays $15 for 3 items, so each costs $5.", False)
p("money5", "45", "He earns $15 per hour for 3 hours, which totals $45.", True)
p("money5", "15", "He earns $15 per hour for 3 hours, which totals $45.", False)
p("sole", "50", "It costs 50", True)
p("sole", "50", "It costs 50 more than 30", False)
p("yesno", "\\text{yes}", "No, it cannot be done.", False)
p("yesno", "\\text{no}", "No. The sum is always odd.", True)
p("yesno", "\\text{Yes}", "$\\boxed{\\text{Yes}}$", True)
p("yesno", "\\text{Yes}", "$\\boxed{\\text{No}}$", False)
p("abs5", "(-3,3)", "$\\boxed{|x| < 3}$", True)
p("abs5", "(-3,3)", "$\\boxed{|x| > 3}$", False)
p("abs5", "[-3,3]", "$\\boxed{|x| < 3}$", False)
p("abs5", "(-\\infty,-3]\\cup[3,\\infty)", "$\\boxed{|x| \\ge 3}$", True)
p("neq5", "(-\\infty, 2) \\cup (2, \\infty)", "$\\boxed{x \\ne 2}$", True)
p("neq5", "(-\\infty, 2) \\cup (2, \\infty)", "$\\boxed{x \\ne 3}$", False)
p("repeat5", "\\frac{1}{7}", "$\\boxed{0.142857142857\\ldots}$", True)
p("repeat5", "\\frac{1}{7}", "$\\boxed{0.142857\\ldots}$", False)
p("repeat5", "\\frac{1}{6}", "$\\boxed{0.1666\\ldots}$", True)
p("repeat5", "\\frac{1}{6}", "$\\boxed{0.1\\overline{6}}$", True)
p("repeat5", "\\frac{1}{6}", "$\\boxed{0.16}$", False)
p("repeat5", "\\pi", "$\\boxed{3.14159\\ldots}$", False)
p("ratio5", "\\frac{2}{3}", "$\\boxed{2:3}$", True)
p("ratio5", "\\frac{2}{3}", "$\\boxed{3:2}$", False)
p("ratio5", "2:3", "$\\boxed{4:6}$", True)
p("ratio5", "2:3", "$\\boxed{0.6}$", False)
p("base5", "1011_2", "$\\boxed{1011_{2}}$", True)
p("base5", "1011_2", "$\\boxed{1011_{3}}$", False)
p("base5", "1011_2", "$\\boxed{1010}$", False)
p("base5", "2A_{16}", "$\\boxed{2A}$", True)
p("base5", "123_4", "$\\boxed{123}$", True)
p("base5", "123_4", "$\\boxed{27}$", False)  # the digits were asked for
p("trigdeg", "\\frac{1}{2}", "$\\boxed{\\cos 60^\\circ}$", True)
p("trigdeg", "\\frac{1}{2}", "$\\boxed{\\sin 60^\\circ}$", False)
p("trigdeg", "1", "$\\boxed{\\tan 45^\\circ}$", True)


# -- round 6: Math-Verify- and lighteval-style outputs, GSM8K sentences, matrices, scientific -----
p("mvstyle", "\\{1,2\\}", "$\\boxed{\\{1,2\\}}$", True)
p("mvstyle", "\\{1,2\\}", "$\\boxed{\\{1,3\\}}$", False)
p("mvstyle", "1,2", "$x=1 \\text{ and } x=2$", True)
p("mvstyle", "1,2", "$x=1 \\text{ and } x=3$", False)
p("mvstyle", "\\frac{\\sqrt{505}}{7}", "$\\boxed{\\frac{\\sqrt{505}}{7}}$", True)
p("mvstyle", "\\frac{\\sqrt{505}}{7}", "$\\boxed{\\sqrt{\\frac{505}{49}}}$", True)
p("mvstyle", "\\frac{\\sqrt{505}}{7}", "$\\boxed{\\frac{\\sqrt{505}}{5}}$", False)
p("mvstyle", "x^2", "$$ \\boxed{x^2} $$", True)
p("mvstyle", "x^2", "$$ \\boxed{x^3} $$", False)
p("mvstyle", "\\frac{1}{\\sqrt{3}}", "$\\boxed{\\dfrac{\\sqrt{3}}{3}}$", True)
p("mvstyle", "\\frac{1}{2}", "$$\\frac{1}{2} = 0.5$$", True)
p("mvstyle", "-\\infty", "The answer is $-\\infty$.", True)
p("mvstyle", "-\\infty", "The answer is $\\infty$.", False)
p("mvstyle", "[1,\\infty)", "$\\boxed{\\left[ 1, \\infty \\right)}$", True)
p("mvstyle", "[1,\\infty)", "$\\boxed{x \\geq 1}$", True)
p("mvstyle", "[1,\\infty)", "$\\boxed{x > 1}$", False)
p("mvstyle", "(1, 2] \\cup [3, 4)", "$\\boxed{(1,2]\\cup[3,4)}$", True)
p("mvstyle", "(1, 2] \\cup [3, 4)", "$\\boxed{[3,4)\\cup(1,2]}$", True)
p("mvstyle", "(1, 2] \\cup [3, 4)", "$\\boxed{(1,2)\\cup[3,4)}$", False)
p("mvstyle", "(0,1) \\cup (2,3)", "$\\boxed{x \\in (0,1) \\cup (2,3)}$", True)
p("mvstyle", "(0, \\infty)", "$\\boxed{\\{x : x > 0\\}}$", True)
p("mvstyle", "(0, \\infty)", "$\\boxed{\\{x \\mid x \\ge 0\\}}$", False)
p("light", "5", "the answer is 5.", True)
p("light", "5", "Answer: $5$", True)
p("light", "5", "**Answer:** 5", True)
p("light", "5", "\\textbf{Answer:} 5", True)
p("light", "5", "**Answer:** 6", False)
p("light", "5", "Final answer: 5", True)
p("light", "5", "FINAL ANSWER: 5", True)
p("light", "5", "Final answer: 55", False)
p("light", "5", "## Final Answer\n5", True)
p("light", "5", "## Final Answer\n\\boxed{5}", True)
p("light", "5", "## Final Answer\n\\boxed{6}", False)
p("light", "\\frac{\\pi}{6}", "**Final Answer**\n\\[ \\boxed{\\dfrac{\\pi}{6}} \\]", True)
p("light", "\\frac{\\pi}{6}", "**Final Answer**\n\\[ \\boxed{\\dfrac{\\pi}{3}} \\]", False)
p(
    "light",
    "(3, \\frac{\\pi}{2})",
    "**Final Answer**\n\\[ \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)} \\]",
    True,
)
p(
    "light",
    "(3, \\frac{\\pi}{2})",
    "**Final Answer**\n\\[ \\boxed{\\left( 3, \\frac{\\pi}{4} \\right)} \\]",
    False,
)
p("gsm6", "18", "The answer is 18.", True)
p("gsm6", "18", "The answer is 18 dollars.", True)
p("gsm6", "18", "The answer is $18.", True)
p("gsm6", "18", "The answer is 18 eggs per day.", True)
p("gsm6", "18", "The answer is 16 eggs per day.", False)
p("gsm6", "18", "So she makes 9 * 2 = $18 every day at the farmers' market.", True)
p("gsm6", "18", "So she makes 9 * 2 = $16 every day at the farmers' market.", False)
p("gsm6", "624", "Total = 4 * 156 = 624 pages.\nThe answer is 624", True)
p("gsm6", "624", "Total = 4 * 156 = 624 pages.\nThe answer is 642", False)
p("gsm6", "3", "He needs 3 more hours to finish the 12-page report.", True)
p("gsm6", "3", "Each bag weighs 3 kg, so in 4 days she carries 12 kg.", False)
p("gsm6", "12", "Each bag weighs 3 kg, so in 4 days she carries 12 kg.", True)
p(
    "matrix6",
    "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}}$",
    True,
)
p(
    "matrix6",
    "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}}$",
    False,
)
p(
    "matrix6",
    "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
    "$\\boxed{\\left[\\begin{matrix}1&2\\\\3&4\\end{matrix}\\right]}$",
    True,
)
p(
    "matrix6",
    "\\begin{pmatrix} 0.5 \\\\ 0.25 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix} \\frac12 \\\\ \\frac14 \\end{pmatrix}}$",
    True,
)
p(
    "matrix6",
    "\\begin{pmatrix} 0.5 \\\\ 0.25 \\end{pmatrix}",
    "$\\boxed{\\begin{pmatrix} \\frac12 \\\\ \\frac13 \\end{pmatrix}}$",
    False,
)
p("sci6", "1.2\\times 10^{-5}", "$\\boxed{1.2 \\times 10^{-5}}$", True)
p("sci6", "1.2\\times 10^{-5}", "$\\boxed{0.000012}$", True)
p("sci6", "1.2\\times 10^{-5}", "$\\boxed{1.2E-5}$", True)
p("sci6", "1.2\\times 10^{-5}", "$\\boxed{1.2 \\times 10^{5}}$", False)
p("sci6", "1.2\\times 10^{-5}", "$\\boxed{12 \\times 10^{-6}}$", True)


# -- round 7: other languages, worked-out chains, floor/ceil/gcd/lcm, plus-minus -------------------
p("ml", "25", "所以，小明一共有 25 个苹果。", True)
p("ml", "25", "所以，小明一共有 24 个苹果。", False)
p("ml", "3", "答：需要 3 小时。", True)
p("ml", "3", "答：需要 4 小时。", False)
p("ml", "12", "よって、答えは 12 です。", True)
p("ml", "12", "よって、答えは 13 です。", False)
p("ml", "64", "Il reste donc 64 € à payer dans 3 mois.", True)
p("ml", "3", "Il reste donc 64 € à payer dans 3 mois.", False)
p("ml", "15", "Por lo tanto, Juan tiene 15 canicas.", True)
p("ml", "15", "Por lo tanto, Juan tiene 16 canicas.", False)
p("ml", "4", "Also braucht sie 4 Stunden.", True)
p("ml", "4", "Also braucht sie 5 Stunden.", False)
p("ml", "7", "Ответ: 7.", True)
p("ml", "7", "Ответ: 8.", False)
p("ml", "7", "Resposta: 7", True)
p("ml", "7", "정답은 7입니다.", True)
p("ml", "7", "정답은 8입니다.", False)
p("x7", "12", "The answer is: **12 apples**.", True)
p("x7", "12", "The answer is: **21 apples**.", False)
p("x7", "12", "Final answer: 12\n\nExplanation: we used 3 steps and checked 2 cases.", True)
p("x7", "12", "Final answer: 13\n\nExplanation: we used 3 steps and checked 12 cases.", False)
p("x7", "6", "So, x = 4 and y = 2; thus x + y = 6.", True)
p("x7", "6", "So, x = 4 and y = 2; thus x + y = 8.", False)
p("x7", "512", "Hence $a_{10} = 512$.", True)
p("x7", "512", "Hence $a_{10} = 256$.", False)
p("x7", "3", "The sum of the roots is $-\\frac{b}{a} = -\\frac{-6}{2} = 3$.", True)
p("x7", "3", "The sum of the roots is $-\\frac{b}{a} = -\\frac{-6}{2} = -3$.", False)
p("x7", "\\frac{7}{2}", "Therefore, the value of $k$ is $\\frac{7}{2}$, which completes the problem.", True)
p("x7", "\\frac{7}{2}", "Therefore, the value of $k$ is $\\frac{5}{2}$, which completes the problem.", False)
p("x7", "20", "Area $= \\frac{1}{2} \\cdot 5 \\cdot 8 = 20$ square units.", True)
p("x7", "20", "Area $= \\frac{1}{2} \\cdot 5 \\cdot 8 = 40$ square units.", False)
p("x7", "9", "We need $\\lceil 8.5 \\rceil = 9$ buses.", True)
p("x7", "9", "We need $\\lfloor 8.5 \\rfloor = 8$ buses.", False)
p("x7", "9", "$\\boxed{\\lceil 8.5 \\rceil}$", True)
p("x7", "2", "The GCD is $\\gcd(12, 14) = 2$.", True)
p("x7", "2", "$\\boxed{\\gcd(12,14)}$", True)
p("x7", "84", "$\\boxed{\\operatorname{lcm}(12,14)}$", True)
p("x7", "84", "$\\boxed{\\text{lcm}(12,14)}$", True)
p("x7", "84", "$\\boxed{\\operatorname{lcm}(12,15)}$", False)
p("x7", "5", "$\\boxed{|-5|}$", True)
p("x7", "5", "$\\boxed{\\left|-5\\right|}$", True)
p("x7", "3", "$\\boxed{\\sqrt{9}}$", True)
p("x7", "3", "$\\boxed{\\pm 3}$", False)
p("x7", "-3, 3", "$\\boxed{\\pm 3}$", True)
p("x7", "\\pm 3", "$\\boxed{3, -3}$", True)
p("x7", "\\pm 3", "$\\boxed{3}$", False)
p("x7", "1 \\pm \\sqrt{2}", "$\\boxed{1+\\sqrt2, 1-\\sqrt2}$", True)
p("x7", "1 \\pm \\sqrt{2}", "$x = 1 \\pm \\sqrt{2}$", True)
p("x7", "1 \\pm \\sqrt{2}", "$\\boxed{1+\\sqrt2}$", False)
p("x7", "5", "$\\boxed{a + b = 2 + 3 = 6}$", False)
p("x7", "6", "$\\boxed{a + b = 2 + 3 = 6}$", True)
p("x7", "6", "$\\boxed{a + b = 6}$", False)
p("x7", "21", "Area $= \\frac{1}{2} \\cdot 5 \\cdot 8 = 20$ square units.", False)


# -- round 8: R1-style think/answer, nested boxes, code, options with values, powers, word answers --
p(
    "r1",
    "9",
    "<think>\nOkay, 3 squared is 9. Wait, maybe 6? No, 9.\n</think>\n\nThe answer is $\\boxed{9}$.",
    True,
)
p("r1", "9", "<think>\nOkay, 3 squared is 9.\n</think>\n\nThe answer is $\\boxed{6}$.", False)
p("r1", "9", "<think>\nOkay, 3 squared is 9.\n</think>\n<answer>9</answer>", True)
p("r1", "9", "<think>\nOkay, 3 squared is 9.\n</think>\n<answer>\n$9$\n</answer>", True)
p("r1", "9", "<think>\nOkay, 3 squared is 9.\n</think>\n<answer>6</answer>", False)
p("r1", "9", "<think>\nOkay, 3 squared is 9. Then we multiply by 2 to get 18 and", False)
p("nest", "5", "$\\boxed{\\boxed{5}}$", True)
p("nest", "5", "$\\boxed{5}.$", True)
p("nest", "\\frac{1}{2}", "\\boxed{\\frac{1}{2}}}", True)
p("nest", "\\{1, 2\\}", "$\\boxed{\\left\\{1, 2\\right\\}}$", True)
p("nest", "\\{1, 2\\}", "$\\boxed{\\left\\{1, 3\\right\\}}$", False)
p("code", "55", "```python\nprint(sum(range(11)))\n```\nOutput: 55\n\nSo the answer is 55.", True)
p("code", "55", "```python\nprint(sum(range(11)))\n```\nOutput: 55\n\nSo the answer is 45.", False)
p("code", "55", "```python\nx = 45\n```\nThe final answer is $\\boxed{55}$.", True)
p(
    "mcq8",
    "B",
    "Let's evaluate each option.\nA) 12 - too small\nB) 15 - correct\nC) 18 - too large\n\nAnswer: B",
    True,
)
p(
    "mcq8",
    "B",
    "Let's evaluate each option.\nA) 12 - too small\nB) 15 - too large\nC) 18 - correct\n\nAnswer: C",
    False,
)
p("mcq8", "B", "The correct answer is **B) 15**.", True)
p("mcq8", "B", "The correct answer is **C) 18**.", False)
p("mcq8", "B", "Option (B) is correct.", True)
p("mcq8", "B", "Option (D) is correct.", False)
p("mcq8", "15", "The correct answer is **B) 15**.", True)
p("mcq8", "A", "Answer: (A) $\\frac{1}{2}$", True)
p("mcq8", "A", "Answer: (B) $\\frac{1}{2}$", False)
p("frac8", "\\frac{a+b}{2}", "$\\boxed{\\frac{b+a}{2}}$", True)
p("frac8", "\\frac{a+b}{2}", "$\\boxed{\\frac{a}{2}+\\frac{b}{2}}$", True)
p("frac8", "\\frac{a+b}{2}", "$\\boxed{\\frac{a+b}{3}}$", False)
p("frac8", "\\frac{1}{x}", "$\\boxed{x^{-1}}$", True)
p("frac8", "\\frac{1}{x}", "$\\boxed{-x^{-1}}$", False)
p("pow8", "2^{2^{3}}", "$\\boxed{256}$", True)
p("pow8", "2^{2^{3}}", "$\\boxed{64}$", False)
p("pow8", "3^{100}", "$\\boxed{3^{100}}$", True)
p("pow8", "3^{100}", "$\\boxed{3^{99}}$", False)
p("pow8", "\\frac{1}{2^{98}}", "$\\boxed{2^{-98}}$", True)
p("pow8", "\\frac{1}{2^{98}}", "$\\boxed{2^{-99}}$", False)
p("txt8", "\\text{A}", "$\\boxed{\\text{A}}$", True)
p("txt8", "\\text{Bob}", "The winner is Bob.", True)
p("txt8", "\\text{Bob}", "The winner is Alice.", False)
p("txt8", "\\text{Bob}", "$\\boxed{\\text{Bob}}$", True)
p("txt8", "\\text{blue}", "Therefore the last ball drawn is blue.", True)
p("txt8", "\\text{blue}", "Therefore the last ball drawn is red.", False)
p("txt8", "\\text{blue}", "Therefore the last ball drawn is not blue.", False)
p("mcq8", "15", "The correct answer is **C) 18**.", False)
p("mcq8", "18", "The correct answer is **B) 15**.", False)


# -- round 9: near misses that must not be paid ------------------------------------------------------
for ref, resp, ok in [
    ("2", "$\\boxed{2x}$", False),
    ("10", "$\\boxed{10^2}$", False),
    ("12", "The answer is 12 and 13.", False),
    ("3", "The value lies between 3 and 5.", False),
    ("5", "$\\boxed{x = 5 \\text{ or } x = -5}$", False),
    ("\\pi", "The answer is approximately 3.", False),
    ("2", "$\\boxed{\\frac{1}{2}}$", False),
    ("2", "$\\boxed{-2}$", False),
    ("2", "$\\boxed{2\\sqrt{2}}$", False),
    ("2", "$\\boxed{\\frac{2}{1}}$", True),
    ("2", "$\\boxed{2.0001}$", False),
    ("2", "$\\boxed{1.9999999}$", True),
    ("5", "The answer is not 5, it is 6.", False),
    ("6", "The answer is not 5, it is 6.", True),
    ("5", "Is the answer 5? No. The answer is 6.", False),
    ("5", "If the answer were 5, then the sum would be odd, so the answer is 7.", False),
    ("7", "If the answer were 5, then the sum would be odd, so the answer is 7.", True),
    ("5", "$\\boxed{5}$ is wrong; the answer is $\\boxed{6}$.", False),
    ("100", "$\\boxed{100\\%}$", True),
    ("1", "$\\boxed{100\\%}$", False),
    ("0", "$\\boxed{}$", False),
    ("0", "The answer is .", False),
    ("1", "$\\boxed{x}$", False),
    ("x", "$\\boxed{1}$", False),
    ("x", "$\\boxed{X}$", False),
    ("\\text{A}", "$\\boxed{a}$", True),
    ("e", "$\\boxed{2.71828}$", True),  # within rel_tol 1e-6 and one unit of the last digit
    ("\\sqrt{2}", "$\\boxed{1.41421356}$", True),
    ("\\frac{1}{3}", "$\\boxed{0.33}$", False),
    ("\\frac{1}{3}", "$\\boxed{0.333333}$", True),
    ("1000", "$\\boxed{1000.5}$", False),
    ("10^{10}", "$\\boxed{10^{10}+1}$", False),
    ("(1,2)", "$\\boxed{(1,2,3)}$", False),
    ("\\{1,2\\}", "$\\boxed{\\{1,2,2\\}}$", True),
    ("\\{1,2,3\\}", "$\\boxed{\\{1,2\\}}$", False),
    ("1,2,3", "$\\boxed{1,2}$", False),
    ("1,2", "$\\boxed{1,2,3}$", False),
    ("[0,1]", "$\\boxed{[0,1)}$", False),
    ("x^2", "$\\boxed{|x|^2}$", True),
    ("x", "$\\boxed{|x|}$", False),
    ("x", "$\\boxed{\\sqrt{x^2}}$", False),
]:
    p("neg9", ref, resp, ok)


# -- round 10: fractions in words -------------------------------------------------------------------
for ref, resp, ok in [
    ("\\frac{1}{2}", "The probability is one half.", True),
    ("1", "The probability is one half.", False),
    ("\\frac{2}{3}", "The answer is two-thirds.", True),
    ("\\frac{1}{3}", "The answer is two-thirds.", False),
    ("\\frac{3}{4}", "$\\boxed{\\text{three quarters}}$", True),
    ("\\frac{3}{2}", "The answer is three halves.", True),
    ("3", "The answer is three halves.", False),
]:
    p("fraction_words", ref, resp, ok)
