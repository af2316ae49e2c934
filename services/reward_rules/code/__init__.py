"""Code-test grader: programs from responses run against unit tests in a bubblewrap sandbox."""

from services.reward_rules.code.backends.factory import SandboxUnavailableError
from services.reward_rules.code.config import CodeConfig
from services.reward_rules.code.grader import CodeGrader

__all__ = ["CodeConfig", "CodeGrader", "SandboxUnavailableError"]
