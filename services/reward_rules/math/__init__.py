"""Math-answer grading: is a response's final answer mathematically the reference?

Pipeline (each a pure module): extract -> normalize -> parse -> equivalence, run by
`core.grade` inside worker processes (`pool`) under a hard deadline; `MathGrader` is
the kit-facing Grader.

`MathConfig` and `MathGrader` load on first use, so `pool.prestart()` can start the fork
server before the grader's own imports (pydantic, the contract) are paid for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.reward_rules.math.grader import MathConfig, MathGrader

__all__ = ["MathConfig", "MathGrader"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from services.reward_rules.math import grader

        return getattr(grader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
