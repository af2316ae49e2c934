"""Builds the reward_rules grader from settings: every rule grader this install has."""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.reward_rules.code import CodeGrader
from services.reward_rules.dispatch import RulesGrader
from services.reward_rules.format_rules import FormatGrader
from services.reward_rules.math.grader import MathGrader
from services.reward_rules.settings import RulesServiceSettings
from services.scoring.grader import Grader, GraderUnavailableError, UnavailableGrader

log = logging.getLogger(__name__)

# Factories, not instances: a grader may start worker processes when built.
GRADERS: dict[str, Callable[[RulesServiceSettings], Grader]] = {
    "format": lambda s: FormatGrader(s.format),
    "math": lambda s: MathGrader(s.math),
    "code": lambda s: CodeGrader(s.code),
}


def build_one(settings: RulesServiceSettings, name: str) -> Grader:
    return GRADERS[name](settings)


def build_grader(settings: RulesServiceSettings) -> RulesGrader:
    """Every rule grader; one that cannot run here (no sandbox) answers GRADER_ERROR saying why."""
    graders: dict[str, Grader] = {}
    for name, make in GRADERS.items():
        try:
            graders[name] = make(settings)
        except GraderUnavailableError as exc:
            log.error("reward_rules: the %s grader is unavailable: %s", name, exc)
            graders[name] = UnavailableGrader(name, str(exc))
    return RulesGrader(graders, settings.default_grader, settings.reference_grader)
