"""All configuration in one place: environment variables over an optional YAML file over defaults.

Env vars use the prefix ARBITER_ and `__` for nesting (ARBITER_CACHE__BACKEND=redis,
ARBITER_REWARD_RULES__HTTP_PORT=9000); the YAML file is named by ARBITER_CONFIG or
`--config`, and mirrors the same tree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from arbiter.logkeys import DEFAULT_REFLECTION_KEYWORDS
from arbiter.openrlhf import DEFAULT_EOS_MARKERS
from services.common.tls import TLSSettings
from services.common.yamlconf import describe_errors

# How long this service's own clients keep an idle connection to a server it calls (vLLM, an LLM
# judge): shorter than a uvicorn-served one keeps it (vLLM, SGLang: 5 s), so a call never goes out
# on a connection the server is closing (it fails: a batch of fallback rewards, a judge attempt
# counted toward the breaker). A server that keeps connections longer costs a new one after 2 s idle.
UPSTREAM_KEEPALIVE_S = 2.0


class BatchSettings(BaseModel):
    max_batch_size: int = Field(default=64, ge=1)
    max_wait_ms: float = Field(default=5.0, ge=0.0, description="how long a batch waits to fill")
    max_queue: int = Field(default=20_000, ge=1, description="queued samples before OVERLOADED")
    max_concurrent_batches: int = Field(default=4, ge=1)


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    http_port: int = Field(default=8100, ge=0, le=65535, description="0 picks a free port")
    grpc_port: int = Field(default=9100, ge=-1, le=65535, description="0 picks a free port, -1 disables gRPC")
    deadline_s: float = Field(default=60.0, gt=0, description="per-request deadline; well inside 180 s")
    fallback_reward: float = Field(default=0.0, description="reward of a sample that could not be graded")
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    max_samples_per_request: int = Field(default=4096, ge=1)
    batch: BatchSettings = Field(default_factory=BatchSettings)
    auth_token_env: str = Field(
        default="",
        description="env var holding a bearer token; when set, all but /healthz and /readyz require it",
    )
    # What one HTTP client may hold before its request reaches the app (services/transports/httpguard.py).
    max_header_bytes: int = Field(
        default=64 * 1024, ge=1024, description="request line + headers; 431 beyond"
    )
    idle_timeout_s: float = Field(default=60.0, gt=0, description="a new connection that sends nothing")
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="a request's headers, from its first byte"
    )
    body_timeout_s: float = Field(default=60.0, gt=0, description="to receive a body once its headers are in")
    # Longer than the clients keep idle connections (httpx 5 s, aiohttp 15 s): a client then never
    # reuses a connection just as the server closes it (the request would meet a reset).
    keep_alive_s: float = Field(
        default=75.0, gt=0, description="an idle kept-alive connection is closed after"
    )
    max_connections: int = Field(
        default=0, ge=0, description="open HTTP connections at once; 0: the fd limit less a reserve"
    )
    tls: TLSSettings = Field(
        default_factory=TLSSettings,
        description="HTTPS and gRPC over TLS, optional mTLS (services/common/tls.py)",
    )


class CacheSettings(BaseModel):
    backend: Literal["memory", "redis", "none"] = "memory"
    max_entries: int = Field(default=200_000, ge=0)
    redis_url: str = "redis://127.0.0.1:6379/0"
    ttl_s: int = Field(default=7 * 24 * 3600, ge=0, description="0 keeps entries forever")
    redis_timeout_s: float = Field(default=0.25, gt=0)
    redis_retry_after_s: float = Field(default=5.0, ge=0, description="pause after Redis fails")
    redis_max_connections: int = Field(default=32, ge=1, description="pooled connections per process")


class EmergenceSettings(BaseModel):
    keywords: list[str] = Field(default_factory=lambda: list(DEFAULT_REFLECTION_KEYWORDS))
    eos_markers: list[str] = Field(default_factory=lambda: list(DEFAULT_EOS_MARKERS))
    repetition_ngram: int = Field(default=4, ge=1)


class LogSettings(BaseModel):
    level: str = "INFO"
    json_format: bool = Field(default=False, description="one JSON object per line")


class _SectionEnvSource(EnvSettingsSource):
    """Env vars, where a section comes only from ARBITER_<SECTION>__<FIELD>.

    A bare ARBITER_<SECTION> is not read as the section's JSON: ARBITER_GATEWAY is the trainer
    adapters' gateway address (host:port), often exported in the same shell as `arbiter serve`.
    """

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        value, key, value_is_complex = super().get_field_value(field, field_name)
        if self._field_is_complex(field)[0]:
            return None, key, value_is_complex
        return value, key, value_is_complex


class KitSettings(BaseSettings):
    """The settings every deployment has; services/settings_tree.py adds one section per service."""

    model_config = SettingsConfigDict(env_prefix="ARBITER_", env_nested_delimiter="__", extra="forbid")

    cache: CacheSettings = Field(default_factory=CacheSettings)
    emergence: EmergenceSettings = Field(default_factory=EmergenceSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    workers: int = Field(
        default=1,
        ge=0,
        le=64,
        description="processes serving the same ports (SO_REUSEPORT), each with its own engine; "
        "0: one per CPU. /metrics and /v1/stats merge all of them",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments, then env vars, then the YAML file, then defaults.
        return init_settings, _SectionEnvSource(settings_cls), YamlConfigSettingsSource(settings_cls)


S = TypeVar("S", bound=KitSettings)


class SettingsError(ValueError):
    """Invalid settings; the message names each bad field and, for a YAML file, its line."""


def load_settings(cls: type[S], config_file: str | Path | None = None, **overrides: Any) -> S:
    """Settings from env + YAML; `config_file` wins over ARBITER_CONFIG."""
    path = config_file or os.environ.get("ARBITER_CONFIG")
    if not path:
        try:
            return cls(**overrides)
        except ValidationError as exc:
            raise SettingsError(describe_errors(exc, None)) from exc
    if not Path(path).is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    config = SettingsConfigDict(**{**cls.model_config, "yaml_file": str(path)})
    from_file = type(cls.__name__, (cls,), {"model_config": config})
    try:
        return from_file(**overrides)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc, path)) from exc
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path}: not valid YAML: {exc}") from exc
