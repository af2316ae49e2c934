"""The environments an episode can name (`environment` of a start request)."""

from __future__ import annotations

from services.episodes.environments.base import (
    COUNTERS,
    FLAGS,
    Environment,
    EnvironmentContext,
    EnvironmentFactory,
    StepOutcome,
)
from services.episodes.environments.code_feedback import CodeFeedbackEnvironment
from services.episodes.environments.python_tool import PythonToolEnvironment

ENVIRONMENTS: dict[str, EnvironmentFactory] = {
    "python_tool": PythonToolEnvironment,
    "code_feedback": CodeFeedbackEnvironment,
}

__all__ = [
    "COUNTERS",
    "ENVIRONMENTS",
    "FLAGS",
    "Environment",
    "EnvironmentContext",
    "EnvironmentFactory",
    "StepOutcome",
]
