"""Conditional components: a recipe part that is called only when another part's logs ask for it.

The math_verifier recipe is the case in point: the rule grader answers every sample in
milliseconds, and a verifier model (the judge's `verifier` rubric) is asked only for the samples
the rules could not decide (`math/undecided == 1`). The semantics, all in the recipe's config:

- `when`: conditions on the result of another component of the same recipe (one that is always
  called); the component is called when any of them holds. A condition holds only on an OK result
  that carries the log: a rule grader that failed or timed out asks no verifier (its failure is
  already the composition's, flagged `gateway/degraded`).
- a component whose condition does not hold is skipped: its value is `otherwise` (default 0),
  `component/<name>/called` is 0, and nothing of it is forwarded.
- `decides: <component>`: when called and OK, its verdict (value, score) stands in for that
  component's in the formula and the sample's score; `component/<that>` still logs the rule's own
  value. When it fails (an outage, a timeout), that component's own verdict stands and the result
  is flagged (`component/<name>/ok` 0, `gateway/degraded` 1, not cached): never the verifier's
  fallback, so an outage neither zeroes nor pays a sample silently.
- `decision_log: <key>`: a log that is 1 when the component decided the sample, else 0 (the key is
  on every result, as every extra_logs key must be).

The detail of every composed result names the path that decided it ("correct decided by verifier").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arbiter.contract import RESERVED_LOG_KEYS, Result, Status

CALLED_SUFFIX = "/called"
# Log prefixes the gateway writes itself: a decision log may not take one of their keys.
_OWN_PREFIXES = ("component/", "gateway/")


def called_key(name: str) -> str:
    return f"component/{name}{CALLED_SUFFIX}"


class Condition(BaseModel):
    """`component`'s log `log` compared with one bound: `equals`, `at_least` or `at_most`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    component: str = Field(description="a component of the same recipe that is always called")
    log: str = Field(min_length=1, description="one of its logs, e.g. math/undecided")
    equals: float | None = None
    at_least: float | None = None
    at_most: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Condition:
        bounds = [b for b in (self.equals, self.at_least, self.at_most) if b is not None]
        if len(bounds) != 1:
            raise ValueError(f"condition on {self.log!r}: give exactly one of equals, at_least, at_most")
        return self

    def holds(self, outcome: Result | str | None) -> bool:
        """Only on an OK result that carries the log: a failed component asks for nothing."""
        if not isinstance(outcome, Result) or outcome.status is not Status.OK:
            return False
        value = outcome.logs.get(self.log)
        if value is None:
            return False
        if self.equals is not None:
            return value == self.equals
        if self.at_least is not None:
            return value >= self.at_least
        return self.at_most is not None and value <= self.at_most

    def describe(self) -> str:
        if self.equals is not None:
            return f"{self.component} {self.log} == {self.equals:g}"
        if self.at_least is not None:
            return f"{self.component} {self.log} >= {self.at_least:g}"
        return f"{self.component} {self.log} <= {self.at_most:g}"


class Conditional(Protocol):
    """What this module reads of a component's settings (services/gateway/settings.ComponentSpec)."""

    @property
    def when(self) -> list[Condition] | None: ...

    @property
    def decides(self) -> str | None: ...

    @property
    def decision_log(self) -> str | None: ...


def should_call(component: Conditional, outcomes: Mapping[str, Result | str]) -> bool:
    """Whether a conditional component is called, given the results of the always-called ones."""
    return any(condition.holds(outcomes.get(condition.component)) for condition in component.when or ())


def check(components: Mapping[str, Conditional], formula_names: set[str], score: str | None) -> None:
    """Refuse a recipe whose conditional parts cannot mean what they say (ValueError naming why)."""
    deciders: dict[str, str] = {}
    for name, component in components.items():
        if component.when is None:
            if component.decides or component.decision_log:
                raise ValueError(f"component {name!r}: decides and decision_log need a `when` condition")
            continue
        if not component.when:
            raise ValueError(f"component {name!r}: `when` needs at least one condition")
        for condition in component.when:
            target = components.get(condition.component)
            if target is None:
                raise ValueError(
                    f"component {name!r}: its condition names {condition.component!r}, not a component "
                    f"of this recipe ({sorted(components)})"
                )
            if target.when is not None:
                raise ValueError(
                    f"component {name!r}: its condition names {condition.component!r}, which is "
                    "conditional itself (a condition reads a component that is always called)"
                )
        decided = component.decides
        if decided is not None:
            target = components.get(decided)
            if target is None or target.when is not None:
                raise ValueError(
                    f"component {name!r} decides {decided!r}, which is not an always-called component "
                    "of this recipe"
                )
            if decided in deciders:
                raise ValueError(f"components {deciders[decided]!r} and {name!r} both decide {decided!r}")
            deciders[decided] = name
            if name in formula_names:
                raise ValueError(
                    f"the formula names {name!r}, which decides {decided!r}: name {decided!r} (it carries "
                    f"{name!r}'s verdict when {name!r} decided)"
                )
            if score == name:
                raise ValueError(f"score names {name!r}, which decides {decided!r}: name {decided!r}")
        key = component.decision_log
        if key is not None:
            if decided is None:
                raise ValueError(f"component {name!r}: decision_log needs `decides`")
            if key in RESERVED_LOG_KEYS or key.startswith(_OWN_PREFIXES):
                raise ValueError(f"component {name!r}: decision_log {key!r} is a reserved or gateway log key")
