"""Options of the NeMo-Gym facade (section `episodes.nemo_gym` of the Arbiter settings)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class NemoGymSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=False,
        description="serve NeMo-Gym's resources-server routes (/seed_session, /verify, "
        "/aggregate_metrics, /close_session and the tool route) on the service holding episodes",
    )
    environment: str = Field(
        default="",
        description="the episode environment a seeded session opens for its tool calls (python_tool); "
        "'' opens none (single-turn verify); a row's `environment` or verifier_metadata.environment "
        "overrides it",
    )
    tool_name: str = Field(
        default="python",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$",
        description='the function tool NeMo-Gym\'s agent calls as POST /<tool_name> {"code": ...}; the '
        "code runs in the session's episode",
    )
    max_sessions: int = Field(default=4096, ge=1, description="sessions held per worker process")
    session_idle_ttl_s: float = Field(
        default=600.0, gt=0, description="a session untouched this long is forgotten (its episode finished)"
    )
