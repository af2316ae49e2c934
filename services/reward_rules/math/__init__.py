"""Math-answer grading: is a response's final answer mathematically the reference?

Pipeline (each a pure module): extract -> normalize -> parse -> equivalence, run by
`core.grade` inside worker processes (`pool`) under a hard deadline; `MathGrader` is
the kit-facing Grader.
"""

from services.reward_rules.math.grader import MathConfig, MathGrader

__all__ = ["MathConfig", "MathGrader"]
