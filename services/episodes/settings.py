"""Options of the episode service (section `episodes` of the Arbiter settings)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.episodes.nemo_gym.settings import NemoGymSettings


class ShapingSettings(BaseModel):
    """Per-turn terms added to the graded final reward (all 0: the final grade alone)."""

    model_config = ConfigDict(extra="forbid")

    tool_error_penalty: float = Field(default=0.0, ge=0, description="subtracted per tool call that raised")
    turn_penalty: float = Field(default=0.0, ge=0, description="subtracted per turn after the first")
    format_bonus: float = Field(
        default=0.0, ge=0, description="added when the final answer is boxed or in <answer> tags"
    )


class PythonToolSettings(BaseModel):
    """The `python_tool` environment: code in the action runs in the episode's own interpreter."""

    model_config = ConfigDict(extra="forbid")

    tool_syntax: Literal["fenced", "tag", "both"] = Field(
        default="both", description="fenced: ```python blocks; tag: <TAG>...</TAG>; both"
    )
    tag: str = Field(default="code", pattern=r"^[A-Za-z_][\w-]{0,31}$", description="the tool-call tag")
    feedback_template: str = Field(
        default="<output>\n{output}\n</output>\n", description="{output} is replaced by the tool's output"
    )
    max_turns: int = Field(default=8, ge=1, description="actions per episode; the last one is graded")
    prestart: bool = Field(
        default=True,
        description="start an episode's interpreter when it starts (while the policy writes its first "
        "turn), where max_live_interpreters leaves a free slot; false: on its first tool call",
    )
    max_tool_calls: int = Field(default=16, ge=1, description="code blocks run per episode")
    cell_time_limit_s: float = Field(
        default=5.0, gt=0, description="per cell: CPU time where cgroups count it (wall: 3x + 1 s), else wall"
    )
    episode_time_limit_s: float = Field(default=30.0, gt=0, description="tool time per episode, all cells")
    memory_limit_mb: int = Field(default=512, ge=32, description="per interpreter (its sandbox)")
    max_output_chars: int = Field(default=2048, ge=64, description="of a cell's output kept as feedback")
    max_cell_chars: int = Field(default=65536, ge=64, description="a longer code block is refused")
    max_pids: int = Field(default=32, ge=8, description="processes and threads per interpreter")
    tmpfs_mb: int = Field(default=32, ge=1, description="the interpreter's writable /tmp")
    cpu_limit: float = Field(default=1.0, ge=0, description="CPUs per interpreter (CFS quota); 0: none")
    reuse_sandboxes: bool = Field(
        default=True,
        description="a finished episode's sandbox serves a later episode (an interpreter forked from "
        "its zygote) once its processes are killed, its /tmp emptied and it is proven clean, as "
        "/run_code's are (bwrap only); false: a fresh sandbox per episode",
    )
    kept_sandbox_idle_s: float = Field(
        default=10.0,
        gt=0,
        description="a sandbox kept for reuse and unused this long is killed (all but the "
        "warm_interpreters most recently kept): a burst's sandboxes go once it is over",
    )


class EpisodeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="serve /v1/episodes/* and arbiter.v1.EpisodeService")
    service: Literal["reward_rules", "gateway"] = Field(
        default="reward_rules",
        description="the service that holds episodes; their final answers are graded by its engine "
        "(reward_rules: the rule graders; gateway: its routes and recipes)",
    )
    max_episodes: int = Field(default=4096, ge=1, description="open episodes per worker process")
    forward_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="with several workers: how long a call handed to the worker holding its episode "
        "may take before it answers a flagged failure",
    )
    idle_ttl_s: float = Field(default=600.0, gt=0, description="an episode untouched this long expires")
    max_lifetime_s: float = Field(default=3600.0, gt=0, description="an episode older than this expires")
    remembered: int = Field(
        default=4096, ge=0, description="finished or expired episodes whose last answers are kept for retries"
    )
    max_live_interpreters: int = Field(
        default=64,
        ge=1,
        description="sandboxed interpreters alive at once; past it the least recently used idle one is "
        "reclaimed and its episode replays its earlier cells when it runs code again",
    )
    warm_interpreters: int = Field(default=2, ge=0, description="interpreters started ahead of time")
    sandbox: Literal["bwrap", "unsafe"] = Field(
        default="bwrap", description="unsafe: no isolation (machines without bubblewrap; tests only)"
    )
    sandbox_uid: int = Field(default=65534, ge=1, description="host uid of sandboxes when the server is root")
    python: str = Field(default="/usr/bin/python3", description="interpreter inside the sandbox")
    python_tool: PythonToolSettings = Field(default_factory=PythonToolSettings)
    shaping: ShapingSettings = Field(default_factory=ShapingSettings)
    nemo_gym: NemoGymSettings = Field(default_factory=NemoGymSettings)
