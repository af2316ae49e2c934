"""What the grading pipeline takes and gives: its options and one sample's verdict.

Kept free of the pipeline's imports (mpmath, sympy): the serving process and `arbiter score`
only build options and read verdicts; the grading itself (core.py) runs in the workers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GradeOptions", "MathVerdict"]


@dataclass(frozen=True, slots=True)
class GradeOptions:
    """Comparison settings that change verdicts (part of the grader's config hash)."""

    rel_tol: float = 1e-6
    use_sympy: bool = True
    percent: str = "number"  # `42%` is 42 ("number") or 0.42 ("value"); see equivalence
    decimal_comma: str = "auto"  # is `1,5` the decimal 1.5? "auto" | "never" | "always"


@dataclass(frozen=True, slots=True)
class MathVerdict:
    """A verdict: correct | incorrect | no_answer | too_costly | bad_reference | timeout | error.

    `too_costly`: the answer itself exhausted its budget, memory or recursion (a wrong
    answer); `timeout`: the service ran out of time (the fallback reward).
    """

    verdict: str
    detail: str
    extracted: bool = False
    boxed: bool = False
    parsed: bool = False
    symbolic: bool = False
    prediction: str = ""  # the cleaned answer read from the response
    # Rules cannot decide this one (nothing extracted, a text answer rules cannot compare,
    # multiple choice with no letter): a model verifier may be asked (`math/undecided`).
    undecided: bool = False
    truncated: bool = False  # the response stops before committing to an answer
