"""Which recipe grades a sample: the label names it, else the first matching route.

A JSON label's `recipe` key names a recipe and its `grader` key names a grader (run alone,
as a one-component recipe), so a recipe called like a grader (`math`) never shadows it.
Route conditions are regex searches: `datasource: gsm8k|math` matches `openai/gsm8k` and
`lighteval/MATH` (data-source names carry an org prefix and vary in case, so that one ignores
case); anchor the regex (`^gsm8k$`) for an exact name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from arbiter.contract import Sample
from services.common.saferegex import BoundedPattern
from services.gateway.settings import ComponentSpec, RecipeSpec, RouteSpec
from services.scoring.labels import LabelKind, label_kind


class RouteError(ValueError):
    """The sample names no known recipe or grader and no route matches it."""


@dataclass(frozen=True)
class _CompiledRoute:
    recipe: str
    datasource: BoundedPattern | None
    prompt: BoundedPattern | None
    label: LabelKind | None

    def matches(self, datasource: str, prompt: str, kind: LabelKind) -> bool:
        if self.datasource is not None and not self.datasource.search(datasource):
            return False
        if self.label is not None and self.label != kind:
            return False
        return self.prompt is None or bool(self.prompt.search(prompt))


def datasource_of(sample: Sample) -> str:
    label = sample.label_json()
    value = label.get("datasource") if label else None
    return value if isinstance(value, str) else sample.metadata.get("datasource", "")


class Router:
    def __init__(
        self, routes: list[RouteSpec], recipes: Mapping[str, RecipeSpec], graders: Mapping[str, str]
    ) -> None:
        """`graders` maps every grader name a label may use directly to the service that has it."""
        self.recipes = dict(recipes)
        self.graders = dict(graders)
        self._routes = [
            _CompiledRoute(
                r.recipe,
                BoundedPattern(r.datasource, ignore_case=True) if r.datasource is not None else None,
                BoundedPattern(r.prompt_regex) if r.prompt_regex is not None else None,
                r.label,
            )
            for r in routes
        ]
        self._implicit: dict[str, RecipeSpec] = {}

    def route(self, sample: Sample) -> tuple[str, RecipeSpec]:
        label = sample.label_json()
        if label is not None:
            recipe = label.get("recipe")
            if isinstance(recipe, str):
                return self._recipe(recipe)
            grader = label.get("grader")
            if isinstance(grader, str):
                return self._grader(grader)
        datasource = datasource_of(sample)
        kind = label_kind(sample)
        for route in self._routes:
            if route.matches(datasource, sample.prompt, kind):
                return route.recipe, self.recipes[route.recipe]
        raise RouteError(f"no route matches (datasource {datasource!r}); add a route without conditions")

    def _recipe(self, name: str) -> tuple[str, RecipeSpec]:
        if name in self.recipes:
            return name, self.recipes[name]
        raise RouteError(
            f"label names recipe {name!r}; recipes: {', '.join(sorted(self.recipes)) or 'none'} "
            f"(graders, named by the label's `grader` key: {', '.join(sorted(self.graders)) or 'none'})"
        )

    def _grader(self, name: str) -> tuple[str, RecipeSpec]:
        """A label naming a grader routes itself: a one-component recipe of that grader alone."""
        if name not in self.graders:
            raise RouteError(
                f"label names grader {name!r}; graders: {', '.join(sorted(self.graders)) or 'none'} "
                f"(recipes, named by the label's `recipe` key: {', '.join(sorted(self.recipes)) or 'none'})"
            )
        recipe = self._implicit.get(name)
        if recipe is None:
            recipe = RecipeSpec(components={implicit_component_name(name): ComponentSpec(grader=name)})
            self._implicit[name] = recipe
        return name, recipe


def implicit_component_name(name: str) -> str:
    return re.sub(r"\W", "_", name)
