"""Turn a recipe's component results into one reward, score, status, detail and logs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.common.contract import NO_CACHE_KEY, Result, Status
from services.common.formula import Formula, FormulaError
from services.gateway.settings import RecipeSpec

DEGRADED_KEY = "gateway/degraded"


def component_keys(name: str) -> tuple[str, str]:
    return f"component/{name}", f"component/{name}/ok"


class CompiledRecipe:
    def __init__(self, name: str, spec: RecipeSpec) -> None:
        self.name = name
        self.spec = spec
        self.formula = Formula(spec.formula, set(spec.components)) if spec.formula else None
        self.score_from = spec.score or next(iter(spec.components))

    def compose(self, results: Mapping[str, Result | str], forward: Sequence[str]) -> Result:
        """`results` maps each component to its Result, or to why it has none."""
        values: dict[str, float] = {}
        logs: dict[str, float] = {}
        failures: list[str] = []
        notes: list[str] = []
        worst = Status.OK
        keep = True  # whether a cache may keep the composed reward
        for name, component in self.spec.components.items():
            outcome = results[name]
            if isinstance(outcome, Result) and not outcome.cacheable:
                keep = False
            value_key, ok_key = component_keys(name)
            if isinstance(outcome, Result) and outcome.status is Status.OK:
                values[name] = outcome.reward if component.value == "reward" else outcome.score
                logs[ok_key] = 1.0
                notes.append(
                    f"{name}={values[name]:g} ({outcome.detail})"
                    if outcome.detail
                    else f"{name}={values[name]:g}"
                )
                logs.update({k: v for k, v in outcome.logs.items() if k in forward})
            else:
                values[name] = component.fallback
                logs[ok_key] = 0.0
                if isinstance(outcome, Result):
                    why = f"{outcome.status.value}: {outcome.detail}"
                    worst = outcome.status if worst is Status.OK else worst
                else:
                    why = outcome
                    worst = Status.UPSTREAM_ERROR if worst is Status.OK else worst
                failures.append(f"{name} failed ({why}); used fallback {component.fallback:g}")
            logs[value_key] = values[name]
        logs[DEGRADED_KEY] = 1.0 if failures else 0.0
        # A component's fallback, or a component verdict marked not-cacheable (a fallback judge's),
        # is right for now only: once the component recovers, the same sample gets its real reward.
        if failures or not keep:
            logs[NO_CACHE_KEY] = 1.0
        if len(failures) == len(self.spec.components):
            return Result(reward=0.0, score=0.0, status=worst, detail="; ".join(failures), logs=logs)
        try:
            reward = self.formula(values) if self.formula else sum(values.values())
        except FormulaError as exc:
            return Result(reward=0.0, score=0.0, status=Status.GRADER_ERROR, detail=str(exc), logs=logs)
        if self.spec.clip is not None:
            reward = min(max(reward, self.spec.clip[0]), self.spec.clip[1])
        scored = results[self.score_from]
        ok = isinstance(scored, Result) and scored.status is Status.OK
        score = scored.score if ok and isinstance(scored, Result) else 0.0
        prediction = scored.prediction if ok and isinstance(scored, Result) else ""
        detail = f"recipe {self.name}: " + "; ".join(notes + failures) + f" -> {reward:g}"
        return Result(
            reward=reward,
            score=score,
            status=Status.OK,
            detail=detail[:2000],
            logs=logs,
            prediction=prediction,
        )
