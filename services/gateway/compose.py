"""Turn a recipe's component results into one reward, score, status, detail and logs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arbiter.contract import NO_CACHE_KEY, Result, Status
from services.gateway.conditional import called_key
from services.gateway.settings import RecipeSpec
from services.scoring.formula import Formula, FormulaError

DEGRADED_KEY = "gateway/degraded"


def component_keys(name: str) -> tuple[str, str]:
    return f"component/{name}", f"component/{name}/ok"


class CompiledRecipe:
    def __init__(self, name: str, spec: RecipeSpec) -> None:
        self.name = name
        self.spec = spec
        self.formula = Formula(spec.formula, set(spec.components)) if spec.formula else None
        self.score_from = spec.score or next(iter(spec.components))
        # Without a formula the reward is the sum of the components, but for the deciders (their
        # verdict is in the component they decide).
        self._summed = [n for n, c in spec.components.items() if c.decides is None]
        self._deciders = {n: c for n, c in spec.components.items() if c.decides is not None}

    def _decide(
        self, values: dict[str, float], logs: dict[str, float], decided: Mapping[str, str], outages: list[str]
    ) -> list[str]:
        """Put each decider's verdict in the component it decided; set the decision logs; and say
        which path decided each component that has a decider."""
        for target, name in decided.items():
            values[target] = values[name]
        paths: list[str] = []
        for name, component in self._deciders.items():
            target = component.decides or ""
            took = decided.get(target) == name
            if component.decision_log:
                logs[component.decision_log] = float(took)
            if took:
                paths.append(f"{target} decided by {name}")
            elif any(outage.startswith(f"{name} failed") for outage in outages):
                paths.append(f"{target} decided by {self.spec.components[target].grader} ({name} failed)")
            else:
                paths.append(f"{target} decided by {self.spec.components[target].grader}")
        return paths

    def compose(self, results: Mapping[str, Result | str], forward: Sequence[str]) -> Result:
        """`results` maps each component to its Result, or to why it has none; a conditional
        component that was not called (its condition did not hold) is absent."""
        values: dict[str, float] = {}
        logs: dict[str, float] = {}
        failures: list[str] = []
        notes: list[str] = []
        outages: list[str] = []  # deciders that failed: the decided component's own verdict stands
        decided: dict[str, str] = {}  # component -> the conditional component that decided it
        worst = Status.OK
        keep = True  # whether a cache may keep the composed reward
        skipped = 0
        for name, component in self.spec.components.items():
            value_key, ok_key = component_keys(name)
            if component.when is not None:
                logs[called_key(name)] = float(name in results)
                if name not in results:  # skipped: its condition did not hold
                    values[name] = logs[value_key] = component.otherwise
                    logs[ok_key] = 1.0
                    skipped += 1
                    continue
            outcome = results[name]
            if isinstance(outcome, Result) and not outcome.cacheable:
                keep = False
            if isinstance(outcome, Result) and outcome.status is Status.OK:
                values[name] = outcome.reward if component.value == "reward" else outcome.score
                logs[ok_key] = 1.0
                notes.append(
                    f"{name}={values[name]:g} ({outcome.detail})"
                    if outcome.detail
                    else f"{name}={values[name]:g}"
                )
                logs.update({k: v for k, v in outcome.logs.items() if k in forward})
                if component.decides is not None:
                    decided[component.decides] = name
            elif component.decides is not None:  # an outage: never its fallback, never silent
                values[name] = component.fallback
                logs[ok_key] = 0.0
                why = f"{outcome.status.value}: {outcome.detail}" if isinstance(outcome, Result) else outcome
                outages.append(f"{name} failed ({why}); the verdict of {component.decides} stands")
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
        paths = self._decide(values, logs, decided, outages)
        logs[DEGRADED_KEY] = 1.0 if failures or outages else 0.0
        # A component's fallback, or a component verdict marked not-cacheable (a fallback judge's),
        # is right for now only: once the component recovers, the same sample gets its real reward.
        if failures or outages or not keep:
            logs[NO_CACHE_KEY] = 1.0
        if len(failures) == len(self.spec.components) - skipped:  # every component called failed
            return Result(reward=0.0, score=0.0, status=worst, detail="; ".join(failures), logs=logs)
        try:
            reward = self.formula(values) if self.formula else sum(values[n] for n in self._summed)
        except FormulaError as exc:
            return Result(reward=0.0, score=0.0, status=Status.GRADER_ERROR, detail=str(exc), logs=logs)
        if self.spec.clip is not None:
            reward = min(max(reward, self.spec.clip[0]), self.spec.clip[1])
        scored = results.get(self.score_from)  # None: a conditional component that was skipped
        ok = isinstance(scored, Result) and scored.status is Status.OK
        score = scored.score if ok and isinstance(scored, Result) else 0.0
        prediction = scored.prediction if ok and isinstance(scored, Result) else ""
        decider = results.get(decided.get(self.score_from, ""))
        if isinstance(decider, Result):  # OK: it decided the component the score comes from
            score = decider.score
            prediction = decider.prediction or prediction
        detail = f"recipe {self.name}: " + "; ".join(paths + notes + failures + outages) + f" -> {reward:g}"
        return Result(
            reward=reward,
            score=score,
            status=Status.OK,
            detail=detail[:2000],
            logs=logs,
            prediction=prediction,
        )
