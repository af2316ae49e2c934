"""A composed reward that used a fallback is not cached.

The gateway's own engine caches composed rewards. When a component failed (its fallback
value was used) or answered with a verdict marked not-cacheable (a fallback judge's), the
composed reward must not outlive the outage: the mark travels to the composed result.
"""

from __future__ import annotations

from arbiter.contract import NO_CACHE_KEY, Result, Status
from services.gateway.compose import CompiledRecipe
from services.gateway.settings import ComponentSpec, RecipeSpec

RECIPE = CompiledRecipe(
    "r",
    RecipeSpec(
        components={"judge": ComponentSpec(grader="helpfulness"), "fmt": ComponentSpec(grader="format")}
    ),
)
OK = Result(reward=1.0, score=1.0)


def test_a_healthy_composition_is_cacheable() -> None:
    assert RECIPE.compose({"judge": OK, "fmt": OK}, ()).cacheable


def test_a_fallback_judge_verdict_makes_the_composition_uncacheable() -> None:
    composed = RECIPE.compose({"judge": OK.not_cached(), "fmt": OK}, ())
    assert composed.status is Status.OK and not composed.cacheable and composed.logs[NO_CACHE_KEY] == 1.0


def test_a_failed_component_makes_the_composition_uncacheable() -> None:
    timeout = Result(reward=0.0, score=0.0, status=Status.TIMEOUT, detail="slow")
    assert not RECIPE.compose({"judge": timeout, "fmt": OK}, ()).cacheable
    assert not RECIPE.compose({"judge": "judge_proxy: unreachable", "fmt": OK}, ()).cacheable
