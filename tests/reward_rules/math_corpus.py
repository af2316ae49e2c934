"""A labelled corpus for the math grader: (category, reference, response, is_correct).

Hand-written; every category of the issue appears with positives and negatives, and
the known traps of other graders (tiny distinct values, salvaged numbers) are negatives.
"""

from __future__ import annotations

B = "\\boxed{{{}}}".format

CASES: list[tuple[str, str, str, bool]] = []


def add(category: str, reference: str, rows: list[tuple[str, bool]], boxed: bool = True) -> None:
    for answer, expected in rows:
        CASES.append((category, reference, f"So the result is {B(answer)}." if boxed else answer, expected))


# -- integers, decimals, separators ---------------------------------------------------------
add(
    "integer",
    "42",
    [
        ("42", True),
        ("042", True),
        ("+42", True),
        ("42.0", True),
        ("43", False),
        ("-42", False),
        ("4.2", False),
        ("420", False),
    ],
)
add("integer", "-7", [("-7", True), ("- 7", True), ("7", False), ("(-7)", True)])
add("integer", "0", [("0", True), ("0.0", True), ("-0", True), ("1", False)])
add(
    "thousands",
    "1000000",
    [
        ("1,000,000", True),
        ("1{,}000{,}000", True),
        ("1\\,000\\,000", True),
        ("10^6", True),
        ("1000001", False),
        ("100000", False),
    ],
)
add("thousands", "12,345", [("12345", True), ("12,345", True), ("12,346", False)])
add(
    "decimal",
    "3.75",
    [
        ("3.75", True),
        ("\\frac{15}{4}", True),
        ("3\\frac{3}{4}", True),
        ("3.750", True),
        ("3.7", False),
        ("3.76", False),
    ],
)
add(
    "decimal",
    "0.125",
    [
        ("\\frac18", True),
        ("1/8", True),
        (".125", True),
        ("0.12", False),
        ("0.1250001", True),
        ("0.126", False),
    ],
)
add(
    "decimal",
    "2.5",
    [("\\frac{5}{2}", True), ("2\\frac12", True), ("5/2", True), ("2.50", True), ("25", False)],
)

# -- fractions and mixed numbers ----------------------------------------------------------------
add(
    "fraction",
    "\\frac{1}{2}",
    [
        ("\\frac12", True),
        ("\\dfrac{1}{2}", True),
        ("\\tfrac{1}{2}", True),
        ("1/2", True),
        ("0.5", True),
        ("\\frac{2}{4}", True),
        ("\\frac{1}{3}", False),
        ("2", False),
        ("-\\frac12", False),
        ("\\frac{1}{2}x", False),
    ],
)
add(
    "fraction",
    "-\\frac{3}{4}",
    [
        ("-0.75", True),
        ("\\frac{-3}{4}", True),
        ("\\frac{3}{-4}", True),
        ("-3/4", True),
        ("\\frac34", False),
        ("-\\frac43", False),
    ],
)
add(
    "fraction",
    "\\frac{7}{3}",
    [
        ("2\\frac{1}{3}", True),
        ("\\frac{14}{6}", True),
        ("2.333", False),
        ("2\\frac{1}{4}", False),
        ("7:3", False),
    ],
)
add(
    "mixed",
    "3\\frac{1}{2}",
    [("\\frac{7}{2}", True), ("3.5", True), ("3 1/2", True), ("\\frac{3}{2}", False)],
)

# -- percentages (rule "number", the default: a percent sign is a unit, 42% answers 42) -------
add(
    "percent",
    "25\\%",
    [
        ("25\\%", True),
        ("25%", True),
        ("25", True),
        ("25.0", True),
        ("0.25", False),
        ("\\frac14", False),
        ("2.5\\%", False),
        ("0.025", False),
        ("26\\%", False),
    ],
)
add("percent", "0.4", [("40\\%", False), ("0.4", True), ("4\\%", False)])
add("percent", "40", [("40\\%", True), ("40 \\text{ percent}", True), ("0.4", False), ("4\\%", False)])

# -- scientific notation ------------------------------------------------------------------------
add(
    "scientific",
    "3 \\times 10^{8}",
    [
        ("300000000", True),
        ("3\\cdot 10^8", True),
        ("3e8", True),
        ("3.0 \\times 10^{8}", True),
        ("3 \\times 10^{9}", False),
        ("30 \\times 10^{7}", True),
        ("3 \\times 10^{-8}", False),
    ],
)
add(
    "scientific",
    "6.02 \\times 10^{23}",
    [("6.02\\times10^{23}", True), ("602 \\times 10^{21}", True), ("6.02 \\times 10^{22}", False)],
)
add(
    "scientific",
    "1.5e-5",
    [("0.000015", True), ("1.5 \\times 10^{-5}", True), ("1.5 \\times 10^{-6}", False)],
)

# -- radicals, pi, e -----------------------------------------------------------------------------
add(
    "radical",
    "2\\sqrt{2}",
    [
        ("\\sqrt{8}", True),
        ("2\\sqrt2", True),
        ("\\sqrt{2}\\cdot 2", True),
        ("2^{3/2}", True),
        ("\\sqrt{2}", False),
        ("4\\sqrt{2}", False),
        ("2.828", False),
    ],
)
add(
    "radical",
    "\\frac{\\sqrt{3}}{2}",
    [
        ("\\frac{1}{2}\\sqrt{3}", True),
        ("\\frac{\\sqrt3}{2}", True),
        ("\\frac{3}{2\\sqrt{3}}", True),
        ("\\sin(60^\\circ)", False),
        ("\\frac{\\sqrt{2}}{2}", False),
        ("\\frac{\\sqrt{3}}{3}", False),
    ],
)
add("radical", "\\sqrt[3]{2}", [("2^{1/3}", True), ("\\sqrt[3]{2}", True), ("\\sqrt{2}", False)])
add("radical", "3+2\\sqrt{2}", [("(1+\\sqrt{2})^2", True), ("2\\sqrt2+3", True), ("3-2\\sqrt2", False)])
add(
    "radical",
    "\\frac{1}{\\sqrt{2}}",
    [("\\frac{\\sqrt{2}}{2}", True), ("\\sqrt{\\frac12}", True), ("\\sqrt{2}", False)],
)
add(
    "pi",
    "2\\pi",
    [
        ("2\\pi", True),
        ("\\pi \\cdot 2", True),
        ("2 \\pi", True),
        ("\\frac{4\\pi}{2}", True),
        ("\\pi", False),
        ("6.28", False),
        ("4\\pi", False),
    ],
)
add(
    "pi",
    "\\frac{\\pi}{3}",
    [("\\frac{1}{3}\\pi", True), ("\\pi/3", True), ("60", False), ("\\frac{\\pi}{6}", False)],
)
add("euler", "e^2", [("e^{2}", True), ("e\\cdot e", True), ("\\exp(2)", True), ("2e", False), ("e^3", False)])
add(
    "euler",
    "1-\\frac{1}{e}",
    [
        ("1-e^{-1}", True),
        ("\\frac{e-1}{e}", True),
        ("1+\\frac{1}{e}", False),
        ("1-e", False),
        ("\\frac{1}{e}", False),
    ],
)
add("log", "\\log_2 8", [("3", True), ("\\log_{2}{8}", True), ("4", False)])
add("log", "\\ln 2", [("\\ln(2)", True), ("\\log(2)", True), ("\\ln 3", False), ("0.693", False)])

# -- symbolic expressions --------------------------------------------------------------------------
add(
    "symbolic",
    "x^2+2x+1",
    [
        ("(x+1)^2", True),
        ("x^2+1+2x", True),
        ("1+2x+x^2", True),
        ("x^2+2x+2", False),
        ("(x-1)^2", False),
        ("(y+1)^2", False),
    ],
)
add(
    "symbolic",
    "\\frac{x+1}{x-1}",
    [("\\frac{-x-1}{1-x}", True), ("1+\\frac{2}{x-1}", True), ("\\frac{x-1}{x+1}", False)],
)
add("symbolic", "\\sin^2 x", [("1-\\cos^2 x", True), ("(\\sin x)^2", True), ("\\sin(x^2)", False)])
add("symbolic", "2ab", [("2ba", True), ("a\\cdot b\\cdot 2", True), ("ab", False), ("2a+b", False)])
add("symbolic", "3n^2-n", [("n(3n-1)", True), ("3n^2+n", False), ("-n+3n^2", True)])
add("symbolic", "\\binom{5}{2}", [("10", True), ("\\dbinom{5}{2}", True), ("20", False)])
add("factorial", "5!", [("120", True), ("5!", True), ("24", False), ("5", False)])

# -- equations and assignments -----------------------------------------------------------------------
add(
    "equation",
    "x=5",
    [("5", True), ("x=5", True), ("x = 5", True), ("y=5", False), ("x=6", False), ("6", False)],
)
add("equation", "5", [("x=5", True), ("k = 5", True), ("x=2+3=5", True), ("x = 4", False)])
add("equation", "y=2x+3", [("2x+3", True), ("y=3+2x", True), ("y=2x-3", False), ("2x-y+3=0", True)])
add(
    "equation",
    "2x+3y=6",
    [("4x+6y=12", True), ("3y+2x=6", True), ("2x+3y=7", False), ("y = 2 - \\frac{2}{3}x", True)],
)
add("equation", "x^2+y^2=25", [("y^2+x^2=25", True), ("x^2+y^2=5", False)])

# -- inequalities and intervals ------------------------------------------------------------------------
add(
    "inequality",
    "x>3",
    [
        ("3<x", True),
        ("x > 3", True),
        ("(3,\\infty)", True),
        ("x\\geq 3", False),
        ("x<3", False),
        ("[3,\\infty)", False),
    ],
)
add(
    "inequality",
    "-1 \\le x < 2",
    [("[-1,2)", True), ("-1\\leq x<2", True), ("2 > x \\ge -1", True), ("(-1,2)", False), ("[-1,2]", False)],
)
add("inequality", "x \\le -2", [("(-\\infty,-2]", True), ("-2 \\ge x", True), ("(-\\infty,-2)", False)])
add(
    "interval",
    "(1,2]",
    [
        ("(1,2]", True),
        ("\\left(1, 2\\right]", True),
        ("(1,2)", False),
        ("[1,2]", False),
        ("(2,1]", False),
        ("(1, 2.0]", True),
    ],
)
add(
    "interval",
    "[0, \\infty)",
    [
        ("[0,\\infty)", True),
        ("[0, +\\infty)", True),
        ("x \\geq 0", True),
        ("(0,\\infty)", False),
        ("[0,\\infty]", False),
    ],
)
add(
    "interval",
    "(-\\infty, 1) \\cup (2, \\infty)",
    [
        ("(2,\\infty)\\cup(-\\infty,1)", True),
        ("(-\\infty,1]\\cup(2,\\infty)", False),
        ("(-\\infty, 2) \\cup (1, \\infty)", False),
    ],
)
add("interval", "[\\frac{1}{2}, 3]", [("[0.5, 3]", True), ("[\\frac12,3]", True), ("[0.5,3)", False)])

# -- sets and tuples --------------------------------------------------------------------------------------
add(
    "set",
    "\\{1, 2, 3\\}",
    [
        ("\\{3, 2, 1\\}", True),
        ("\\{1,2,3\\}", True),
        ("1, 2, 3", True),
        ("3, 1, 2", True),
        ("\\{1, 2\\}", False),
        ("\\{1, 2, 4\\}", False),
    ],
)
add(
    "set",
    "1, 2",
    [
        ("2, 1", True),
        ("x=1, x=2", True),
        ("x = 2 \\text{ or } x = 1", True),
        ("1", False),
        ("1, 2, 3", False),
        ("\\{1,2\\}", True),
    ],
)
add("set", "\\pm 3", [("3, -3", True), ("-3, 3", True), ("\\pm3", True), ("3", False)])
add(
    "set",
    "1 \\pm \\sqrt{2}",
    [
        ("1+\\sqrt{2}, 1-\\sqrt{2}", True),
        ("1-\\sqrt2, 1+\\sqrt2", True),
        ("1+\\sqrt{2}", False),
        ("\\sqrt{2} \\pm 1", False),
    ],
)
add("set", "\\emptyset", [("\\varnothing", True), ("\\{\\}", True), ("0", False)])
add(
    "tuple",
    "(1, 2)",
    [
        ("(1,2)", True),
        ("(1, 2)", True),
        ("(2,1)", False),
        ("(1,2,3)", False),
        ("\\left(1,2\\right)", True),
        ("(1.0, 2)", True),
    ],
)
add(
    "tuple",
    "(3, -\\frac{1}{2})",
    [
        ("(3, -0.5)", True),
        ("\\left(3,-\\frac12\\right)", True),
        ("(-\\frac12, 3)", False),
        ("(3, \\frac12)", False),
    ],
)
add("tuple", "(1, 2, 3)", [("\\langle 1,2,3\\rangle", True), ("(1,3,2)", False), ("1, 2, 3", True)])
add("tuple", "x=1, y=2", [("x=1, y=2", True), ("y=2, x=1", True), ("(1, 2)", True), ("x=2, y=1", False)])

# -- matrices -----------------------------------------------------------------------------------------------
M = "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"
add(
    "matrix",
    M,
    [
        ("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", True),
        ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", True),
        ("\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}", False),
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}", False),
        ("\\begin{pmatrix} 1 & 2 & 3 & 4 \\end{pmatrix}", False),
    ],
)
add(
    "matrix",
    "\\begin{pmatrix} \\frac12 \\\\ -1 \\end{pmatrix}",
    [
        ("\\begin{pmatrix} 0.5 \\\\ -1 \\end{pmatrix}", True),
        ("(\\frac12, -1)", True),
        ("\\begin{pmatrix} -1 \\\\ \\frac12 \\end{pmatrix}", False),
    ],
)

# -- text, units, degrees ------------------------------------------------------------------------------------
add(
    "text",
    "\\text{Monday}",
    [("\\text{Monday}", True), ("Monday", True), ("\\textbf{monday}", True), ("Tuesday", False)],
)
add("text", "\\text{even}", [("\\text{even}", True), ("\\text{odd}", False), ("even", True)])
add(
    "units",
    "5\\text{ cm}",
    [("5", True), ("5 \\text{cm}", True), ("5\\,\\mathrm{cm}", True), ("6", False), ("5\\text{ cm}^2", True)],
)
add(
    "units",
    "12",
    [
        ("12 \\text{ apples}", True),
        ("12\\text{ meters}", True),
        ("\\$12", True),
        ("12 dollars", True),
        ("13 \\text{ apples}", False),
    ],
)
add("units", "\\$18.90", [("18.90", True), ("18.9", True), ("\\$18.9", True), ("18.09", False)])
add(
    "degrees",
    "30^\\circ",
    [
        ("30", True),
        ("30^{\\circ}", True),
        ("30°", True),
        ("30 \\text{ degrees}", True),
        ("60^\\circ", False),
        ("\\frac{\\pi}{6}", False),
    ],
)
add("degrees", "90", [("90^\\circ", True), ("45^\\circ", False)])

# -- complex numbers ----------------------------------------------------------------------------------------
add(
    "complex",
    "3+4i",
    [("4i+3", True), ("3+4\\mathrm{i}", True), ("3-4i", False), ("(3+2i)+2i", True), ("5", False)],
)
add("complex", "-1", [("i^2", True), ("e^{i\\pi}", True), ("1", False)])
add(
    "complex",
    "\\frac{1}{2}-\\frac{\\sqrt{3}}{2}i",
    [("\\frac{1-i\\sqrt{3}}{2}", True), ("\\frac{1+i\\sqrt{3}}{2}", False)],
)

# -- numeric tolerance (must not merge distinct tiny values) ----------------------------------------
add(
    "tolerance",
    "\\frac{1}{3}",
    [("0.333333", True), ("0.3333333333", True), ("0.33", False), ("0.3", False), ("0.334", False)],
)
add("tolerance", "\\pi", [("3.14159265", True), ("3.14", False), ("3", False)])
add("tolerance", "0.33", [("0.33", True), ("0.330", True), ("0.3333", True), ("0.34", False)])
add("tolerance", "1000000", [("1000000.5", False), ("999999", False), ("1000000.0", True)])
add(
    "trap",
    "\\frac{1}{2^{99}}",
    [("\\frac{1}{2^{98}}", False), ("2^{-99}", True), ("\\frac{1}{2^{100}}", False), ("0", False)],
)
add(
    "trap",
    "\\frac{1}{2004!}",
    [
        ("\\frac{1}{2006!}", False),
        ("\\frac{1}{2004!}", True),
        ("\\frac{2005 \\cdot 2006}{2006!}", True),
        ("0", False),
    ],
)
add("trap", "10^{-30}", [("10^{-31}", False), ("0", False), ("\\frac{1}{10^{30}}", True)])
add("trap", "1-\\frac{1}{e}", [("1+\\frac1e", False), ("1", False), ("1 - \\frac{1}{\\mathrm{e}}", True)])
add("trap", "1+\\sqrt{2}", [("1", False), ("\\sqrt{2}+1", True), ("1+\\sqrt{3}", False)])
add(
    "trap",
    "10^{60}",
    [
        ("10^{60}+1", False),
        ("10^{60}", True),
        ("1000000000000000000000000000000000000000000000000000000000000", True),
    ],
)
add("trap", "e^{\\pi\\sqrt{163}}", [("262537412640768744", False), ("e^{\\pi \\sqrt{163}}", True)])

# -- extraction ------------------------------------------------------------------------------------
E: list[tuple[str, str, str, bool]] = [
    ("boxed", "7", "Let me think. First 3+4=7. So \\boxed{7}", True),
    ("boxed", "7", "We get \\boxed{6} at first, but correcting: \\boxed{7}.", True),
    ("boxed", "7", "The final answer is \\boxed{7}. Double check: earlier we had \\boxed{6}", False),
    ("boxed", "\\frac{1}{2}", "The answer is $\\boxed{\\frac{1}{2}}$.", True),
    ("boxed", "\\frac{1}{2}", "\\fbox{\\frac{1}{2}}", True),
    ("boxed", "\\{1,2\\}", "thus \\boxed{\\{1,2\\}}", True),
    ("boxed", "1,2", "The roots are \\boxed{1} and \\boxed{2}.", True),
    ("boxed", "{x^{2}}", "\\boxed{{x^{2}}}", True),
    ("boxed", "9", "\\boxed 9", True),
    ("boxed", "9", "\\boxed{9", False),
    ("answer_is", "42", "After all this work, the answer is 42.", True),
    ("answer_is", "42", "After all this work, the answer is 41.", False),
    ("answer_is", "42", "The final answer is $42$. I hope it is correct.", True),
    ("answer_is", "\\frac{3}{5}", "Therefore, the final answer is: $\\frac{3}{5}$", True),
    ("answer_is", "2", "The answer is 2 because the other root is negative.", True),
    ("answer_colon", "18", "Computation...\nAnswer: 18", True),
    ("answer_colon", "18", "Computation...\n**Answer:** 18", True),
    ("answer_colon", "18", "Computation...\nAnswer: 81", False),
    ("answer_colon", "18", "Final Answer: The final answer is 18. I hope it is correct.", True),
    ("gsm8k", "18", "She sells 16-3-4=9 eggs for 9*2 = 18 dollars.\n#### 18", True),
    ("gsm8k", "1000", "Total is 1,000.\n#### 1,000", True),
    ("gsm8k", "18", "#### 17", False),
    ("answer_tag", "10", "<think>5+5</think><answer>10</answer>", True),
    ("answer_tag", "10", "<think>5+5 = 10</think><answer>11</answer>", False),
    ("answer_tag", "10", "<answer>The sum is \\boxed{10}</answer>", True),
    ("answer_tag", "\\frac{1}{4}", "<answer> $\\frac14$ </answer>", True),
    ("bare", "12", "Adding gives 5 + 7 = 12", True),
    ("bare", "12", "So we have 12 apples in total and 3 oranges", False),
    ("bare", "12", "12", True),
    ("bare", "\\frac{2}{3}", "$\\frac{2}{3}$", True),
    ("bare", "x=3", "x = 3", True),
    ("think", "42", "<think>The answer is 42.</think>The answer is 41.", False),
    ("think", "42", "<think>hmm 41? no.</think>The answer is **42**.", True),
    ("think", "42", "<think>The answer is \\boxed{42}. Let me keep thinking", False),
    ("think", "42", "<think>\\boxed{42}</think>", False),
    ("think", "42", "<think>long thoughts</think>\n\n\\boxed{42}<|im_end|>", True),
    ("bold", "73", "Putting everything together, the total is **73**", True),
    ("bold", "73", "The total count is **72**", False),
    ("special_tokens", "5", "\\boxed{5}</s>", True),
    ("special_tokens", "5", "The answer is 5<|endoftext|>", True),
    ("no_answer", "5", "", False),
    ("no_answer", "5", "I do not know how to solve this problem, sorry about that. It is hard.", False),
    ("choice", "B", "The answer is (B).", True),
    ("choice", "B", "The answer is (C).", False),
    ("choice", "B", "Looking at the options... \\boxed{B}", True),
    ("choice", "B", "Looking at the options... \\boxed{\\text{(B)}}", True),
    ("choice", "(C)", "So the correct choice is C.", True),
    ("choice", "C", "Answer: C", True),
    ("choice", "C", "Answer: D", False),
    ("choice", "A", "**A**", True),
    ("choice", "D", "A is wrong, B is wrong, C is wrong, so the answer is D", True),
    ("reference_solution", "We compute $2+2=4$. So the answer is $\\boxed{4}$.", "\\boxed{4}", True),
    ("reference_solution", "We compute $2+2=4$. So the answer is $\\boxed{4}$.", "\\boxed{5}", False),
    ("reference_solution", "Janet has 3 ducks.\n#### 3", "The answer is 3", True),
    ("reference_json", '{"grader": "math", "answer": "\\\\frac{1}{2}"}', "\\boxed{0.5}", True),
    ("reference_json", '{"grader": "math", "answer": 12}', "\\boxed{12}", True),
    ("reference_json", '{"grader": "math", "answer": ["2", "-2"]}', "\\boxed{-2}", True),
    ("reference_json", '{"grader": "math", "answer": 3.14159, "rel_tol": 0.001}', "\\boxed{\\pi}", True),
    ("reference_json", '{"grader": "math", "answer": "7"}', "\\boxed{8}", False),
]
CASES.extend(E)
