"""A labelled corpus for the math grader: (category, reference, response, is_correct).

Hand-written; every category appears with positives and negatives, and
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
        ("7:3", True),  # a ratio of two numbers is their quotient (as Math-Verify)
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
        ("\\sin(60^\\circ)", True),  # sin of 60 degrees is the value
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
add("tolerance", "0.33", [("0.33", True), ("0.330", True), ("0.3333", False), ("0.34", False)])
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

# -- phrasings in the styles of public grader suites (regression; written for the math
# issue, none copied): extraction, normalisation, choice, several answers ---------------------
PROBES: list[tuple[str, str, bool]] = [
    ("\\text{(C)}", "The answer is \\boxed{\\text{(C)}}", True),
    ("C", "\\boxed{\\textbf{(C)}}", True),
    ("C", "\\boxed{(C)\\ 12}", True),
    ("5", "The answer is: $5$", True),
    ("5", "So, $x = 5$.", True),
    ("0.5", "The answer is $.5$", True),
    ("10", "\\boxed{10\\%}", True),
    ("\\$5.00", "The cost is $\\boxed{\\$5}$.", True),
    ("5", "The answer is $\\mathbf{5}$", True),
    ("8", "$2^3 = \\boxed{8}$", True),
    ("2", "\\boxed{\\sqrt[3]{8}}", True),
    ("3", "$\\log_2 8 = 3$", True),
    ("\\infty", "\\boxed{\\infty}", True),
    ("(-\\infty, 2)", "$x < 2$", True),
    ("(-\\infty, 2)", "$x \\le 2$", False),
    ("x^2+2x+1", "\\boxed{(x+1)^2}", True),
    ("1000", "The answer is 1 000.", True),
    ("1000", "The answer is 1.000.", False),
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{\\sqrt3}2}", True),
    ("2", "$\\boxed{2}$ cm", True),
    ("y = 2x + 1", "\\boxed{2x + 1}", True),
    ("y = 2x + 1", "\\boxed{y = 2x - 1}", False),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}}", True),
    ("5", "Final answer: 5 apples", True),
    ("5", "The final answer is 5 apples.", True),
    ("11", "Janet makes 9 * 2 = $18 every day.\nThe answer is 11.", True),
    ("18", "She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18", True),
    ("A", "The answer is (A) 5 because it works", True),
    ("B", "Among the options, (B) is correct.", True),
    ("B", "I think the answer should be B", True),
    ("B", "The correct answer is option B.", True),
    ("D", "The correct option is (D)", True),
    ("C", "So the answer is $\\boxed{\\mathrm{C}}$", True),
    ("3", "There are $\\boxed{3}$ solutions in total (excluding 0).", True),
    ("\\frac{3}{2}", "$x = \\frac{3}{2}$ or $x = 1.5$", True),
    ("2", "\\boxed{2.0}", True),
    ("-1", "\\boxed{-1}", True),
    ("3", "\\[ \\boxed{3} \\]", True),
    ("\\pi", "\\boxed{\\pi}", True),
    ("\\frac{\\pi}{2}", "\\boxed{90^\\circ}", False),
    ("90", "\\boxed{90^\\circ}", True),
    ("12", "The answer is twelve.", True),
    ("(1,2)", "\\boxed{(1, 2)}", True),
    ("(1,2)", "\\boxed{[1, 2]}", False),
    ("\\{1,2\\}", "\\boxed{\\{2,1\\}}", True),
    ("2", "$$\\boxed{2}$$", True),
    ("1/2", "\\boxed{\\frac{1}{2}}", True),
    ("50", "Il y a donc $50$ élèves.", True),
    ("50", "Hay 50 estudiantes en total.", True),
    ("50", "共有50名学生。", True),
    ("50", "一共有 50 名学生参加了比赛，用了 2 小时。", True),
    ("7", "So the answer is 7 (since 3 + 4 = 7).", True),
    ("7", "**Answer: 7**", True),
    ("7", "The answer is **7**.", True),
    ("7", "Answer: $x=7$", True),
    ("7", "Therefore, $\\boxed{x = 7}$.", True),
    ("\\frac{1}{2}", "The answer is 1/2.", True),
    ("0.5", "The answer is 1/2.", True),
    ("2\\sqrt{3}", "The answer is 2√3.", True),
    ("3", "The answer is 3.\n\nNote: we used 5 steps.", True),
    ("-2", "The answer is −2.", True),
    ("6", "The final answer is $\\boxed{6}$. Note that we checked 4 cases.", True),
    ("3.5", "The answer is 3,5.", True),
    ("120", "$5! = 120$", True),
    ("5!", "\\boxed{120}", True),
    ("10^6", "$\\boxed{1,000,000}$", True),
    ("12480", "The answer is 12,480 dollars.", True),
    ("12480", "\\boxed{\\$12,480}", True),
    ("1234.56", "\\boxed{1,234.56}", True),
    ("0.5", "\\boxed{0,5}", True),
    ("12", "The answer is that there are 12 ways.", True),
    ("30", "In total, 30 students attended.", True),
    ("5", "It will take 5 hours for the tank to fill.", True),
    ("72", "So, Natalia sold 72 clips altogether in April and May.", True),
    ("624", "Thus, James writes 624 pages in a year.", True),
    ("18", "The final answer is: Janet makes $18 every day.", True),
    ("18", "The answer is 18 dollars per day.", True),
    ("18", "Janet makes 16 - 3 - 4 = 9 duck eggs, so she makes 9 * 2 = 18 dollars.", True),
    ("18", "Janet makes 16 - 3 - 4 = 9 duck eggs, so she makes 9 * 2 = 18 dollars.\nThe answer is 18", True),
    ("19", "Final Answer: The final answer is 18. I hope it is correct.", False),
    ("3", "Thus, the answer is $\\boxed{3}$ hours.", True),
    ("\\frac{1}{2}", "The probability is $\\frac{1}{2}$.", True),
    ("\\frac{1}{2}", "The probability that both are red is $\\dfrac{1}{2}$.", True),
    ("\\frac{1}{2}", "The probability that both are red is $\\dfrac{1}{3}$.", False),
    ("x=2", "Solving, we find $x=2$.", True),
    ("2", "Solving, we find $x = 2$.", True),
    ("3", "Solving, we find $x = 2$.", False),
    ("-3", "Thus $x=-3$ is the only solution.", True),
    ("4", "We find that $k=4$ works, and no larger value does, so $k_{\\max}=4$.", True),
    ("17", "**Final answer:** $k = 17$", True),
    ("17", "**Final answer:** $k = 71$", False),
    ("17", "Réponse finale : 17", True),
    ("17", "Respuesta: 17", True),
    ("17", "Antwort: 17", True),
    ("17", "La réponse est donc 17.", True),
    ("17", "La réponse est donc 71.", False),
    ("17", "最终答案：17", True),
    ("17", "答案：$\\boxed{17}$", True),
    ("17", "所以，最终答案是17。", True),
    ("17", "所以，最终答案是71。", False),
    ("32", "So the number of cookies is 32.\n\nHowever, we need to double-check for 3 more minutes.", True),
    ("25", "因此，他们一共需要 25 个苹果。", True),
    ("25", "因此，他们一共需要 25 个苹果。", True),
    ("1200", "所以这辆车的价格是1200元。", True),
    ("1200", "所以这辆车的价格是 1,200 元。", True),
    ("64", "Il reste donc 64 euros.", True),
    ("64", "Por lo tanto, le quedan 64 €.", True),
    ("64", "Por lo tanto, le quedan 46 €.", False),
    ("8", "$x = 3+4 = 8$", True),
    ("(4,9)", "\\boxed{(a,b) = (4,9)}", True),
    ("(4,9)", "The ordered pair is $(4,9)$.", True),
    ("(4,9)", "The ordered pair is $(9,4)$.", False),
    ("\\frac{3}{\\sqrt{5}}", "$\\frac{AM}{MB}=\\frac{3\\sqrt{5}}{5}$", True),
    ("C", "Therefore, the answer is (C).", True),
    ("C", "The answer is $\\boxed{(C)}$.", True),
    ("C", "Answer: C) 12 meters", True),
    ("C", "(C) 12 meters", True),
    ("C", "I'd go with C", True),
    ("C", "Both A and B are incorrect. D is also incorrect. Therefore C.", True),
    ("C", "Not A, not B, definitely C.", True),
    ("B", "Not A, not B, definitely C.", False),
    ("B", "The answer is not A; it's B.", True),
    ("(C) 12 meters", "The answer is C.", True),
    ("(C) 12 meters", "12 meters", True),
    ("(C) 12 meters", "\\boxed{12}", True),
    ("(C) 12 meters", "\\boxed{13}", False),
    ("A. Paris", "The capital is Paris.", True),
    ("A. Paris", "Paris", True),
    ("A. Paris", "London", False),
    ("1, 6", "Thus $x = 1$ or $x = 6$.", True),
    ("1, 6", "The solutions are $x=1$ and $x=6$.", True),
    ("1, 6", "The solutions are $\\boxed{1}$ and $\\boxed{6}$.", True),
    ("1, 6", "The solutions are $\\boxed{1, 6}$.", True),
    ("1, 6", "The solutions are $\\boxed{1}$ and $\\boxed{7}$.", False),
    ("3, 8", "(a) \\boxed{3}\n(b) \\boxed{8}", True),
    ("3, 8", "**(a)** The answer is $\\boxed{3}$.\n\n**(b)** The answer is $\\boxed{8}$.", True),
    ("[1,4)", "$x\\in[1,4)$", True),
    ("[1,4)", "The solution set is $[1, 4)$.", True),
    ("[1,4)", "The solution set is $\\{x \\mid 1 \\le x < 4\\}$.", True),
    ("[1,4)", "$1 \\leq x \\lt 4$", True),
    ("(1,4)", "$1 < x < 4$", True),
    ("(-\\infty, -1) \\cup (3, \\infty)", "$x < -1$ or $x > 3$", True),
    ("(-\\infty, -1) \\cup (3, \\infty)", "\\boxed{(-\\infty,-1)\\cup(3,+\\infty)}", True),
    ("\\{2,7\\}", "\\boxed{2, 7}", True),
    ("\\{2,7\\}", "\\boxed{\\{7,2\\}}", True),
    ("\\{2,7\\}", "\\boxed{\\{2\\}}", False),
    ("\\frac{1}{2}", "\\boxed{\\left(\\frac{1}{2}\\right)}", True),
    ("\\frac{1}{2}", "\\boxed{\\dfrac12}", True),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{2}\\!}", True),
    ("5", "\\boxed{\\text{5}}", True),
    ("5", "\\boxed{\\mathrm{5}}", True),
    ("\\frac{\\sqrt{2}}{2}", "\\\\boxed{\\\\frac{\\\\sqrt{2}}{2}}", True),
    ("\\frac{\\sqrt{2}}{2}", "\\boxed{\\frac{\\sqrt{2}}{2}\\,}", True),
    ("12\\text{ cm}^2", "\\boxed{12}", True),
    ("12\\,\\text{cm}^2", "\\boxed{12 \\text{ cm}^2}", True),
    ("12\\,\\text{cm}^2", "\\boxed{13 \\text{ cm}^2}", False),
    ("\\frac{1}{2}", "\\boxed{.5}", True),
    ("0.5", "\\boxed{\\frac12}", True),
    ("\\sqrt{2}", "\\boxed{\\sqrt2}", True),
    ("\\frac{\\sqrt{3}}{3}", "\\boxed{\\frac{1}{\\sqrt{3}}}", True),
    ("\\$32", "\\boxed{32}", True),
    ("32", "\\boxed{\\$32.00}", True),
    ("x^2+y^2", "\\boxed{y^2+x^2}", True),
    ("\\text{(A)}", "\\boxed{A}", True),
    ("(A)", "\\boxed{\\text{A}}", True),
    ("\\text{A}", "The answer is $\\boxed{\\text{(A)}}$", True),
    ("10\\%", "\\boxed{10}", True),
    ("1/3", "\\boxed{0.\\overline{3}}", True),
    ("3", "\\boxed{x=3}", True),
    ("x=3", "\\boxed{3}", True),
    ("\\frac{1}{4}", "\\boxed{1/4}", True),
    ("-\\frac{1}{4}", "\\boxed{-1/4}", True),
    ("4", "\\boxed{4.}", True),
    ("2", "\\boxed{\\{2\\}}", True),
    ("\\infty", "\\boxed{+\\infty}", True),
    ("[2,\\infty)", "\\boxed{[2, \\infty)}", True),
    ("(0,1)", "\\boxed{(0, 1)}", True),
    ("\\text{Evelyn}", "\\boxed{\\text{Evelyn}}", True),
    ("\\text{Evelyn}", "\\boxed{Evelyn}", True),
    ("\\text{Evelyn}", "\\boxed{Bob}", False),
    ("\\frac{7}{2}", "\\boxed{3\\frac{1}{2}}", True),
    ("\\frac{7}{2}", "\\boxed{3 \\frac{1}{2}}", True),
    ("\\begin{pmatrix} 2 \\\\ 3 \\end{pmatrix}", "\\boxed{\\begin{pmatrix}2\\\\3\\end{pmatrix}}", True),
    ("\\begin{pmatrix} 2 \\\\ 3 \\end{pmatrix}", "\\boxed{(2,3)}", True),
    ("\\begin{pmatrix} 2 \\\\ 3 \\end{pmatrix}", "\\boxed{\\begin{pmatrix}3\\\\2\\end{pmatrix}}", False),
    ("6", "\\boxed{6\\text{ units}^2}", True),
    ("6", "\\boxed{6\\mbox{ cm}}", True),
    ("70^\\circ", "\\boxed{70}", True),
    ("70", "\\boxed{70^{\\circ}}", True),
    ("\\frac{\\pi}{4}", "\\boxed{45^\\circ}", False),
    ("2\\sqrt{10}", "\\boxed{\\sqrt{40}}", True),
    ("e^{x}", "\\boxed{\\exp(x)}", True),
    ("\\ln 2", "\\boxed{\\log 2}", True),
    ("\\log_2 3", "\\boxed{\\frac{\\ln 3}{\\ln 2}}", True),
    ("a^2-b^2", "\\boxed{(a-b)(a+b)}", True),
    ("a^2-b^2", "\\boxed{(a-b)^2}", False),
    ("\\frac{x}{2}", "\\boxed{x/2}", True),
    ("\\frac{x}{2}", "\\boxed{0.5x}", True),
    ("2", "\\boxed{2}\\boxed{3}", False),
    ("0", "\\boxed{0}", True),
    ("-0.5", "\\boxed{-\\frac{1}{2}}", True),
    ("1.5", "\\boxed{1.50}", True),
    ("1.5", "\\boxed{1.51}", False),
    ("3.14", "\\boxed{\\pi}", False),
    ("2.718", "\\boxed{e}", False),
    ("1000", "\\boxed{10^3}", True),
    ("1000", "\\boxed{1e3}", True),
    ("\\{1,2,3\\}", "\\boxed{\\{1,2,3\\}}", True),
    ("\\{1,2,3\\}", "\\boxed{\\{1,2\\}}", False),
    ("(1,2,3)", "\\boxed{(1,3,2)}", False),
    ("y=-x+3", "\\boxed{y = 3 - x}", True),
    ("y=-x+3", "\\boxed{x + y = 3}", True),
    ("y=-x+3", "\\boxed{y = x + 3}", False),
    ("\\frac{3}{2}", "\\boxed{\\frac{6}{4}}", True),
    ("\\dfrac{1}{3}", "\\boxed{\\tfrac13}", True),
    ("5", "\\boxed{5\\,}", True),
    ("5", "\\boxed{ 5 }", True),
    ("12", "\\boxed{12\\text{ inches}}", True),
    ("12", "\\boxed{\\text{12 inches}}", True),
    ("12", "\\boxed{12 \\ \\text{inches}}", True),
    ("\\text{12 inches}", "\\boxed{12}", True),
    ("10", "\\boxed{\\mathbf{10}}", True),
    ("-2", "\\boxed{-2}", True),
    ("(-2, 3)", "\\boxed{(-2,3)}", True),
    ("x \\in (-2, 3)", "\\boxed{(-2,3)}", True),
    ("x \\in (-2, 3)", "\\boxed{-2 < x < 3}", True),
    ("4\\sqrt{2}", "\\boxed{4 \\sqrt{2}}", True),
    ("\\frac{-1+\\sqrt{5}}{2}", "\\boxed{\\frac{\\sqrt{5}-1}{2}}", True),
    ("1 + i", "\\boxed{i + 1}", True),
    ("2i", "\\boxed{2i}", True),
    ("-\\frac{2}{3}", "\\boxed{\\frac{-2}{3}}", True),
    ("\\$1.50", "\\boxed{\\$1.5}", True),
    ("80\\%", "\\boxed{80\\%}", True),
    ("5\\text{ km/h}", "\\boxed{5}", True),
    ("\\text{no}", "\\boxed{\\text{No}}", True),
    ("\\text{yes}", "\\boxed{\\text{No}}", False),
    ("18.5", "He earns \\$18.50 per hour.", True),
    ("18", "Janet makes $18.00 every day at the farmers' market.", True),
    ("25", "The percentage is 25%.", True),
    ("5", "답: 5개", True),
    ("5", "정답은 5개입니다.", True),
    ("5", "答えは5個です。", True),
    ("300", "所以一共需要300元。", True),
    ("300", "所以一共需要 300 元，还剩 20 元。", False),
    ("20", "所以一共需要 300 元，还剩 20 元。", True),
    (
        "18",
        "<think>9*2=18</think>\n\nTo find the total, multiply 9 by 2.\n\n"
        "### Final Answer\n\\[\n\\boxed{18}\n\\]",
        True,
    ),
    ("18", "**Final Answer:** \\( \\boxed{18} \\)", True),
    ("B", "The final answer is $\\boxed{\\text{(B)}}$", True),
    ("18", "Final answer: $18$.", True),
    ("18", "Final answer: 18 dollars.", True),
    ("18", "So she makes 18 dollars a day.", True),
    ("18", "Therefore, she earns $\\$18$.", True),
    ("18", "The result: 18", True),
    ("18", "Result = 18", True),
    ("18", "∴ x = 18", True),
    ("18", "Hence, $x=18$ is the answer.", True),
    ("18", "18 is the answer.", True),
    ("18", "The answer, therefore, is 18.", True),
    ("2", "Hence $\\boxed{x=2}$ and $\\boxed{y=3}$.", False),
    ("(2,3)", "Hence $\\boxed{x=2}$ and $\\boxed{y=3}$.", True),
    ("x=2, y=3", "Hence $x=2$ and $y=3$.", True),
    ("5", "So, the value is 5 cm².", True),
    ("5", "The area is $5 \\text{ cm}^2$.", True),
    ("0.75", "The probability is 3/4 = 0.75.", True),
    ("0.75", "The probability is $\\frac{3}{4} = 0.75$.", True),
    ("\\frac34", "The probability is 3/4 = 0.75.", True),
    ("75\\%", "The probability is 75%.", True),
    ("4", "\\boxed{4}\n\nWait, actually, let me double-check. Yes, 4 is right.", True),
    ("4", "\\boxed{4}\n\nHmm, actually it should be 5. \\boxed{5}", False),
    ("x = \\pm 2", "\\boxed{-2, 2}", True),
    ("\\pm 2", "\\boxed{x = 2 \\text{ or } x = -2}", True),
    ("f(x) = 2x+1", "\\boxed{2x+1}", True),
    ("2x", "\\boxed{f'(x) = 2x}", True),
    ("(1,2)", "\\boxed{\\langle 1, 2 \\rangle}", True),
    ("5\\%", "\\boxed{5}\\%", True),
    ("\\text{no solution}", "\\boxed{\\text{No solution}}", True),
    ("\\text{undefined}", "The expression is \\boxed{\\text{undefined}}.", True),
    ("3:30", "\\boxed{3:30}", True),
    ("y = \\frac{1}{2}x + 3", "\\boxed{y = 0.5x + 3}", True),
    ("x^2+2x+1=0", "\\boxed{(x+1)^2=0}", True),
    ("\\{1\\} \\cup [2,3]", "\\boxed{[2,3] \\cup \\{1\\}}", True),
    ("-\\infty", "\\boxed{-\\infty}", True),
    ("2", "The greatest common divisor is $\\gcd(4, 6) = 2$.", True),
    ("6", "The least common multiple is $\\operatorname{lcm}(2, 3) = 6$.", True),
    ("10", "$\\binom{5}{2} = 10$", True),
    ("10", "$C(5,2) = 10$", True),
    ("2\\pi", "\\boxed{6.2832}", False),
    ("\\frac{\\pi}{2}", "\\boxed{\\frac{\\pi}{2}\\text{ radians}}", True),
    ("45^\\circ", "\\boxed{45^\\circ}", True),
    ("45", "\\boxed{45°}", True),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{2}}.", True),
    ("4", "\\boxed{\\textbf{4}}", True),
    ("4", "\\boxed{\\displaystyle 4}", True),
    ("-1", "\\boxed{\\text{-}1}", True),
    ("1,000", "\\boxed{1 000}", True),
    ("1000", "\\boxed{1\\ 000}", True),
    ("0.1", "\\boxed{10^{-1}}", True),
    ("2^{10}", "\\boxed{1024}", True),
    ("\\frac{1}{1024}", "\\boxed{2^{-10}}", True),
    ("\\sqrt{2}/2", "\\boxed{\\frac{\\sqrt 2}{2}}", True),
    ("a+b", "\\boxed{b+a}", True),
    ("\\frac{a}{b}", "\\boxed{a/b}", True),
    ("\\frac{a}{b}", "\\boxed{b/a}", False),
    ("n(n+1)/2", "\\boxed{\\frac{n^2+n}{2}}", True),
    ("2^n", "\\boxed{2^{n}}", True),
    ("2^n", "\\boxed{n^2}", False),
    ("\\frac{1}{x}", "\\boxed{x^{-1}}", True),
    ("e", "\\boxed{\\mathrm{e}}", True),
    ("i", "\\boxed{\\sqrt{-1}}", True),
    ("\\{1,2\\}", "\\boxed{\\left\\{ 1, 2 \\right\\}}", True),
    ("\\frac12", "\\boxed{½}", True),
    ("\\sqrt{2}", "\\boxed{√2}", True),
    ("2\\pi", "\\boxed{2π}", True),
    ("(-\\infty, \\infty)", "\\boxed{\\mathbb{R}}", True),
    ("(-\\infty, \\infty)", "\\boxed{\\text{all real numbers}}", True),
    ("\\mathbb{R}", "\\boxed{(-\\infty, \\infty)}", True),
    ("(-\\infty,\\infty)", "\\boxed{(-\\infty,0)}", False),
    ("x^2", "\\boxed{x²}", True),
    ("3", "\\boxed{３}", True),
    ("\\frac{1}{2}, \\frac{1}{3}", "\\boxed{\\frac{1}{2} \\text{ and } \\frac{1}{3}}", True),
    ("-3", "\\boxed{−3}", True),
    ("5", "$\\boxed{5}$.", True),
    ("5", "\\(\\boxed{5}\\)", True),
    ("\\frac{1}{2}", "The answer is \\(\\frac{1}{2}\\).", True),
    ("\\frac{1}{2}", "The answer is \\[\\frac{1}{2}\\]", True),
    ("\\frac{1}{2}", "The answer is $$\\frac{1}{2}$$", True),
    ("x=1", "\\boxed{x=1}", True),
    ("x=1", "\\boxed{y=1}", False),
    ("2", "\\boxed{2}\\boxed{}", True),
    ("12", "\\boxed{12}.\n\n</think>\n\nFinal: 12", True),
    ("0.3", "\\boxed{30\\%}", False),
    ("(2,3)", "The point is $(2, 3)$.", True),
    ("(2,3)", "The point is $(3, 2)$.", False),
    ("\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}", "\\boxed{I}", False),
    ("7", "So $f(3) = 7$.", True),
    ("7", "So $f(3) = 8$.", False),
    ("\\frac{1}{6}", "The probability is 1/6 ≈ 0.167.", True),
    ("\\frac{1}{6}", "The probability is 1/6 ≈ 0.167.", True),
    ("0.167", "The probability is $\\frac{1}{6}$.", False),
    ("0.17", "The probability is $\\frac{1}{6}$.", False),
    ("0.2", "The probability is $\\frac{1}{6}$.", False),
    ("B", "La bonne réponse est B.", True),
    ("C", "Respuesta correcta: C", True),
    ("B", "正确答案：B", True),
    ("C", "正确选项是C。", True),
    ("C", "答案：C", True),
    ("C", "Die richtige Antwort ist C.", True),
    ("D", "Правильный ответ: D", True),
    ("B", "The best answer is B.", True),
    ("B", "Option B is correct.", True),
    ("B", "Option B is incorrect, so the answer is D.", False),
    ("D", "Option B is incorrect, so the answer is D.", True),
    ("A", "(A) is the only one that works.", True),
    ("A", "Only (A) works; (B), (C), and (D) fail.", True),
    ("C", "We eliminate A and B. Between C and D, C is correct.", True),
    (
        "15",
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",  # noqa: E501
        False,
    ),
    (
        "72",
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",  # noqa: E501
        True,
    ),
    (
        "10",
        "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",  # noqa: E501
        True,
    ),
    ("10", "Weng earns $0.2 per minute, so for 50 minutes she earned $10.", True),
    ("5", "</think>\n\n**Answer**: 5", True),
    ("5", "</think>\n\n**Answer**: 6", False),
    ("\\frac{5}{2}", "\\boxed{\\frac{5}{2}}\n\nThis is the final answer; note 2 < 3.", True),
    ("42", "The answer is $42$.\n\nVerification: $6 \\times 7 = 42$ ✓", True),
    ("42", "The answer is $42$.\n\nVerification: $6 \\times 7 = 43$? no.", True),
    ("100", "Answer: 100%", True),
    ("2", "$$x = 2$$", True),
    ("2", "x = 2", True),
    ("-2", "x = -2", True),
    ("2", "x = -2", False),
    ("4", "The value of $a+b$ is $\\boxed{4}$.", True),
    ("4", "Thus, $a + b = \\boxed{4}$", True),
    ("4", "Thus, $a + b = \\boxed{5}$", False),
    ("3", "\\boxed{\\text{The answer is } 3}", True),
    ("3", "\\boxed{3 \\text{ (three)}}", True),
    ("17", "The smallest possible value of $k$ is $\\boxed{17}$, attained at $n = 5$.", True),
    ("1/2", "P = 0.5", True),
    ("12", "12 apples", True),
    ("12", "12 apples and 3 bananas", False),
    ("-1", "The slope is $-1$.", True),
    ("\\frac{1}{2}", "The slope is $\\frac12$, and the intercept is $3$.", False),
]
CASES.extend(("probe", reference, response, correct) for reference, response, correct in PROBES)
