"""Builds the reward_rm grader from settings."""

from __future__ import annotations

from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings


def build_grader(settings: RMServiceSettings) -> RMGrader:
    return RMGrader(settings)
