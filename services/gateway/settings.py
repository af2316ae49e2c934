"""Settings of the gateway (section `gateway`): where graders live, routes, reward recipes.

```yaml
gateway:
  services:                       # absent: graders run in this process (arbiter serve)
    reward_rules: {replicas: ["10.0.0.5:9101", "10.0.0.6:9101"]}
  routes:                         # first match wins, for labels that do not name a grader or recipe
    - {datasource: "gsm8k|math", recipe: math}    # searched: matches openai/gsm8k, hendrycks_math
    - {prompt_regex: "```python", recipe: code}
    - {label: reference, recipe: math}            # any other plain reference answer
    - {recipe: default}           # no condition: the default
  recipes:
    math:
      components:
        correct: {grader: math}
        format: {grader: format, value: score}
      formula: "0.9*correct + 0.1*format"
      score: correct
      clip: [-1, 1]
```

Without `routes`, a sample whose label carries a reference answer ("42", or a JSON object with
`answer`) goes to the recipe `math` (when there is one) and everything else to `default`: a
trainer's usual label column is a math reference unless the label or a route says otherwise.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from arbiter.tls import ClientTLS
from services.common.saferegex import check_pattern
from services.common.settings import ServerSettings
from services.gateway import conditional
from services.gateway.conditional import Condition
from services.gateway.group_terms import GROUP_TERMS, LEN
from services.scoring.formula import Formula
from services.scoring.labels import LabelKind

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComponentSpec(_Config):
    grader: str = Field(description="a grader (math, code, format, ...) or a whole service (reward_rm, ...)")
    service: str | None = Field(
        default=None, description="the service that has the grader (default: its owner)"
    )
    value: Literal["reward", "score"] = Field(default="reward", description="which number the recipe uses")
    fallback: float = Field(default=0.0, description="its value when it fails or times out")
    timeout_s: float | None = Field(
        default=None, gt=0, description="its own deadline (default: the sample's)"
    )
    metadata: dict[str, str] = Field(
        default_factory=dict,
        description="added to the sample's metadata for this component: {rubric: verifier} for the judge",
    )
    # Conditional components (services/gateway/conditional.py has the semantics).
    when: list[Condition] | None = Field(
        default=None,
        description="call it only when one of these conditions on another component's logs holds",
    )
    otherwise: float = Field(default=0.0, description="its value when its condition does not hold")
    decides: str | None = Field(
        default=None,
        description="when called and OK, its verdict stands in for this component's; when it fails, "
        "that component's own verdict stands, flagged (component/<name>/ok 0, gateway/degraded 1)",
    )
    decision_log: str | None = Field(
        default=None, description="a log that is 1 when it decided the sample, else 0 (math/decided_by)"
    )

    @field_validator("when", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, dict) else value


class GroupSpec(_Config):
    """Terms over the group of samples of one prompt (docs/group-rewards.md)."""

    size: int = Field(default=8, ge=1, le=1024, description="samples per group: n_samples_per_prompt")
    formula: str = Field(
        description="the reward once the group is complete: over component names, `len` and group.* "
        "terms (services/gateway/group_terms.py); the recipe's `formula` is the reward without them"
    )
    vote_grader: str | None = Field(
        default=None, description="majority vote on this grader's predictions (math); group.agree"
    )
    vote_threshold: float = Field(default=0.0, ge=0, le=1, description="the majority's least share")
    vote_requires: str | None = Field(
        default="math/boxed",
        description="a log of the vote grader that must be 1 for a prediction to vote (TTRL votes on "
        "boxed final answers; the math grader otherwise reads a whole response as its answer)",
    )
    pairwise_grader: str | None = Field(
        default=None, description="the judge that compares members for group.win_rate (judge)"
    )
    pairwise_rubric: str = Field(
        default="pairwise", description="its rubric: both presentation orders, a win rate in [0, 1]"
    )


class RecipeSpec(_Config):
    components: dict[str, ComponentSpec] = Field(min_length=1)
    formula: str | None = Field(default=None, description="over component names; default: their sum")
    score: str | None = Field(default=None, description="component whose score is the sample's score")
    clip: tuple[float, float] | None = None
    group: GroupSpec | None = Field(default=None, description="group-aware terms (docs/group-rewards.md)")

    @field_validator("components")
    @classmethod
    def _names(cls, value: dict[str, ComponentSpec]) -> dict[str, ComponentSpec]:
        for name in value:
            if not _NAME.match(name):
                raise ValueError(f"component name {name!r} must be an identifier (letters, digits, _)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RecipeSpec:
        names = {n for n, c in self.components.items() if c.decides is None}  # the default sum's
        if self.formula is not None:
            names = Formula(self.formula, set(self.components)).names  # raises naming the problem
        conditional.check(self.components, names, self.score)
        if self.group is not None:
            Formula(self.group.formula, {*self.components, LEN, *GROUP_TERMS})
        if self.score is not None and self.score not in self.components:
            raise ValueError(f"score {self.score!r} is not one of the components {sorted(self.components)}")
        if self.clip is not None and self.clip[0] > self.clip[1]:
            raise ValueError(f"clip {list(self.clip)} has low > high")
        return self


class RouteSpec(_Config):
    recipe: str
    datasource: str | None = Field(
        default=None,
        description="regex searched in the sample's datasource, ignoring case (gsm8k matches "
        "openai/gsm8k); anchor it (^gsm8k$) for an exact name",
    )
    prompt_regex: str | None = Field(default=None, description="regex searched in the prompt")
    label: LabelKind | None = Field(
        default=None,
        description="reference: a plain non-empty label or a JSON label with an answer; empty: no label",
    )

    @field_validator("datasource", "prompt_regex")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return check_pattern(value) if value is not None else None  # refuses catastrophic patterns


class RemoteService(_Config):
    replicas: list[str] = Field(min_length=1, description="gRPC host:port of each replica")
    auth_token_env: str = Field(default="", description="env var with the replicas' bearer token")
    tls: ClientTLS | None = Field(
        default=None, description="connect over TLS: CA bundle, client certificate for mTLS, server name"
    )


# The embedded defaults: a plain reference answer is graded for correctness by the math grader
# (its component is named like the grader, so the logs match a label naming `math` directly);
# a sample without a reference gets the rule service's default (the format rules).
DEFAULT_ROUTES = (RouteSpec(label="reference", recipe="math"), RouteSpec(recipe="default"))
DEFAULT_RECIPES = {
    "math": RecipeSpec(components={"math": ComponentSpec(grader="math")}, score="math"),
    "default": RecipeSpec(components={"rules": ComponentSpec(grader="reward_rules")}),
}


class GatewayServiceSettings(ServerSettings):
    http_port: int = Field(default=8100, ge=0, le=65535, description="0 picks a free port")
    grpc_port: int = Field(default=9100, ge=-1, le=65535, description="0 picks a free port, -1 disables gRPC")
    deadline_s: float = Field(default=90.0, gt=0, description="per sample; well inside OpenRLHF's 180 s")
    services: dict[str, RemoteService] = Field(default_factory=dict)
    routes: list[RouteSpec] = Field(
        default_factory=lambda: list(DEFAULT_ROUTES),
        description="default: reference answers to the recipe math (when there is one), the rest to default",
    )
    recipes: dict[str, RecipeSpec] = Field(default_factory=lambda: dict(DEFAULT_RECIPES))
    health_interval_s: float = Field(default=2.0, gt=0)
    eject_after_failures: int = Field(default=2, ge=1)
    eject_cooldown_s: float = Field(default=10.0, ge=0)
    stats_window: int = Field(default=4096, ge=16, description="samples in /v1/stats' rolling window")
    group_recipes: dict[str, int] = Field(
        default_factory=dict,
        description="shipped group-aware recipes to add, by name, with their group size "
        "(services/gateway/group_recipes.py: kimi_length, ttrl, dedup, pairwise, group_stats)",
    )
    group_hold_s: float = Field(
        default=150.0,
        gt=0,
        description="the longest a one-sample request waits for its group: answered inside OpenRLHF's "
        "180 s client timeout, early answers carry group/incomplete = 1",
    )
    group_keep_s: float = Field(
        default=600.0, gt=0, description="how long a group is remembered for late members and retries"
    )
    group_max_waiting: int = Field(
        default=32768, ge=1, description="samples held for their groups at most (beyond: answered at once)"
    )

    @model_validator(mode="after")
    def _routes_name_recipes(self) -> GatewayServiceSettings:
        if self.group_recipes:
            from services.gateway.group_recipes import preset  # it builds RecipeSpecs: a late import

            for name, size in self.group_recipes.items():
                self.recipes.setdefault(name, preset(name, size))
        if "routes" not in self.model_fields_set and "math" not in self.recipes:
            # Own recipes without a `math` one and no routes: the default routes lose the math route.
            self.routes = [route for route in self.routes if route.recipe != "math"]
        for index, route in enumerate(self.routes):
            if route.recipe not in self.recipes:
                raise ValueError(
                    f"routes[{index}] names recipe {route.recipe!r}; recipes: {sorted(self.recipes)}"
                )
        return self
