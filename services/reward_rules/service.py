"""Builds the reward_rules grader from settings: every rule grader this install has."""

from __future__ import annotations

from collections.abc import Callable

from services.common.grader import Grader
from services.reward_rules.dispatch import RulesGrader
from services.reward_rules.format_rules import FormatGrader
from services.reward_rules.math.grader import MathGrader
from services.reward_rules.settings import RulesServiceSettings

# Factories, not instances: a grader may start worker processes when built.
GRADERS: dict[str, Callable[[RulesServiceSettings], Grader]] = {
    "format": lambda s: FormatGrader(s.format),
    "math": lambda s: MathGrader(s.math),
}


def build_one(settings: RulesServiceSettings, name: str) -> Grader:
    return GRADERS[name](settings)


def build_grader(settings: RulesServiceSettings) -> RulesGrader:
    return RulesGrader({name: make(settings) for name, make in GRADERS.items()}, settings.default_grader)
