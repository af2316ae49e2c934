"""Settings of the reward_rules service (section `reward_rules` of the Arbiter settings)."""

from __future__ import annotations

from pydantic import Field

from services.common.settings import ServerSettings
from services.reward_rules.code import CodeConfig
from services.reward_rules.format_rules import FormatRulesSettings
from services.reward_rules.math.grader import MathConfig


class RulesServiceSettings(ServerSettings):
    http_port: int = Field(default=8101, ge=0, le=65535, description="0 picks a free port")
    grpc_port: int = Field(default=9101, ge=-1, le=65535, description="0 picks a free port, -1 disables gRPC")
    default_grader: str = Field(
        default="format", description="grader for labels that name none and carry no reference answer"
    )
    reference_grader: str = Field(
        default="math",
        description="grader for labels that name none but carry a reference answer (a plain label, or "
        "JSON with answer/reference/solution); '' sends them to default_grader",
    )
    format: FormatRulesSettings = Field(default_factory=FormatRulesSettings)
    math: MathConfig = Field(default_factory=MathConfig)
    code: CodeConfig = Field(default_factory=CodeConfig)
