"""The whole tree of Arbiter settings: the kit's sections plus one per service.

Env: ARBITER_<SECTION>__<FIELD> (e.g. ARBITER_REWARD_RULES__HTTP_PORT=8101);
YAML: the same tree, in the file named by ARBITER_CONFIG or `--config`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from services.common.settings import KitSettings, load_settings
from services.episodes.settings import EpisodeSettings
from services.gateway.settings import GatewayServiceSettings
from services.judge_proxy.settings import JudgeServiceSettings
from services.reward_rm.settings import RMServiceSettings
from services.reward_rules.settings import RulesServiceSettings


class ArbiterSettings(KitSettings):
    gateway: GatewayServiceSettings = Field(default_factory=GatewayServiceSettings)
    reward_rules: RulesServiceSettings = Field(default_factory=RulesServiceSettings)
    judge_proxy: JudgeServiceSettings = Field(default_factory=JudgeServiceSettings)
    reward_rm: RMServiceSettings = Field(default_factory=RMServiceSettings)
    episodes: EpisodeSettings = Field(default_factory=EpisodeSettings)


def load(config_file: str | Path | None = None) -> ArbiterSettings:
    return load_settings(ArbiterSettings, config_file)
