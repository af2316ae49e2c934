"""Which recipe grades a sample: the label names it, else the first matching route."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from services.common.contract import Sample
from services.gateway.settings import ComponentSpec, RecipeSpec, RouteSpec


class RouteError(ValueError):
    """The sample names no known recipe or grader and no route matches it."""


@dataclass(frozen=True)
class _CompiledRoute:
    recipe: str
    datasource: re.Pattern[str] | None
    prompt: re.Pattern[str] | None

    def matches(self, datasource: str, prompt: str) -> bool:
        if self.datasource is not None and not self.datasource.fullmatch(datasource):
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
                re.compile(r.datasource) if r.datasource is not None else None,
                re.compile(r.prompt_regex) if r.prompt_regex is not None else None,
            )
            for r in routes
        ]
        self._implicit: dict[str, RecipeSpec] = {}

    def route(self, sample: Sample) -> tuple[str, RecipeSpec]:
        label = sample.label_json()
        if label is not None:
            named = label.get("recipe", label.get("grader"))
            if isinstance(named, str):
                return self._named(named)
        datasource = datasource_of(sample)
        for route in self._routes:
            if route.matches(datasource, sample.prompt):
                return route.recipe, self.recipes[route.recipe]
        raise RouteError(f"no route matches (datasource {datasource!r}); add a route without conditions")

    def _named(self, name: str) -> tuple[str, RecipeSpec]:
        if name in self.recipes:
            return name, self.recipes[name]
        if name in self.graders:
            # A label naming a grader routes itself: a one-component recipe of that grader.
            recipe = self._implicit.get(name)
            if recipe is None:
                recipe = RecipeSpec(components={implicit_component_name(name): ComponentSpec(grader=name)})
                self._implicit[name] = recipe
            return name, recipe
        raise RouteError(
            f"label names {name!r}, which is neither a recipe ({', '.join(sorted(self.recipes))}) "
            f"nor a grader ({', '.join(sorted(self.graders))})"
        )


def implicit_component_name(name: str) -> str:
    return re.sub(r"\W", "_", name)
