"""Settings of the judge_proxy service (section `judge_proxy` of the Arbiter settings).

API keys never live here: an upstream names the environment variable that holds its key
(`api_key_env`), and a config that carries a key itself is rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.common.settings import BatchSettings, CacheSettings, ServerSettings

_SECRET_FIELDS = ("api_key", "key", "token", "authorization", "password", "secret")


class UpstreamSettings(BaseModel):
    """One OpenAI-compatible endpoint (vLLM, a hosted API) serving one judge model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", description="label in metrics and details; defaults to the model")
    base_url: str = Field(description="e.g. http://127.0.0.1:8000/v1 (…/chat/completions is appended)")
    model: str
    api_key_env: str | None = Field(default=None, description="environment variable holding the API key")
    max_concurrency: int = Field(default=64, ge=1, description="requests in flight to this upstream")
    attempt_timeout_s: float = Field(default=30.0, gt=0, description="one HTTP attempt, at most")
    rpm: int = Field(default=0, ge=0, description="requests per minute; 0 = unlimited")
    tpm: int = Field(default=0, ge=0, description="tokens per minute (prompt + max_tokens); 0 = unlimited")
    supports_logprobs: bool = Field(default=True, description="ask for top_logprobs when a rubric wants them")
    input_price_per_mtok: float = Field(default=0.0, ge=0, description="USD per million prompt tokens")
    output_price_per_mtok: float = Field(default=0.0, ge=0, description="USD per million completion tokens")
    headers: dict[str, str] = Field(default_factory=dict, description="extra, non-secret request headers")

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_config(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for field in _SECRET_FIELDS:
                if field in data:
                    raise ValueError(
                        f"upstream field {field!r}: keys never go in config files; put the key in an "
                        "environment variable and name it in api_key_env"
                    )
            for header in data.get("headers") or {}:
                if str(header).lower() in {"authorization", "api-key", "x-api-key"}:
                    raise ValueError(f"header {header!r} carries a secret; use api_key_env")
        return data

    @property
    def label(self) -> str:
        return self.name or self.model


class RetrySettings(BaseModel):
    """One retry loop for every upstream call (the HTTP client's own retries are off)."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=4, ge=1, description="HTTP attempts per judge call, all upstreams")
    backoff_base_s: float = Field(default=0.25, ge=0, description="full-jitter backoff: U(0, base * 2^n)")
    backoff_max_s: float = Field(default=4.0, ge=0)
    max_retry_after_s: float = Field(default=60.0, ge=0, description="cap on a Retry-After we honour")
    cooldown_after_failures: int = Field(default=3, ge=1, description="consecutive failures before cooldown")
    cooldown_s: float = Field(
        default=15.0,
        ge=0,
        description="a failing upstream gets no traffic this long, but for one probe at a time when no "
        "other upstream can take the call (half-open: a probe that succeeds ends the pause)",
    )
    probe_interval_s: float = Field(default=1.0, ge=0, description="after a failed probe, wait this long")
    parse_retries: int = Field(default=1, ge=0, description="re-asks after an unparsable or refused verdict")


class RateLimitSettings(BaseModel):
    """rpm/tpm buckets: shared by every replica through Redis, per process otherwise."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "redis"] = "memory"
    redis_url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = "arbiter:judge:ratelimit"
    redis_timeout_s: float = Field(default=0.25, gt=0)
    redis_retry_after_s: float = Field(
        default=5.0, ge=0, description="local limits this long after Redis fails"
    )


class SamplingSettings(BaseModel):
    """Sampling parameters sent to the judge; a rubric may override any of them."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=1024, ge=1)
    seed: int | None = None
    top_logprobs: int = Field(default=20, ge=1, le=20)

    @property
    def deterministic(self) -> bool:
        return self.temperature == 0.0 or self.seed is not None


def _judge_batch() -> BatchSettings:
    # A judge batch is a fan-out of independent HTTP calls: the upstream semaphores bound the
    # real concurrency, so many small batches in flight beat a few large ones.
    return BatchSettings(max_batch_size=32, max_wait_ms=0.0, max_queue=20_000, max_concurrent_batches=64)


def _judge_cache() -> CacheSettings:
    return CacheSettings(backend="memory", max_entries=200_000)


class JudgeServiceSettings(ServerSettings):
    http_port: int = Field(default=8103, ge=0, le=65535, description="0 picks a free port")
    grpc_port: int = Field(default=9103, ge=-1, le=65535, description="0 picks a free port, -1 disables gRPC")
    deadline_s: float = Field(default=120.0, gt=0, description="per-request deadline; well inside 180 s")
    batch: BatchSettings = Field(default_factory=_judge_batch)

    upstreams: list[UpstreamSettings] = Field(
        default_factory=list, description="tried in order: the first is primary, the rest are fallbacks"
    )
    default_rubric: str = Field(default="helpfulness", description="rubric for labels that name none")
    rubric_files: list[Path] = Field(
        default_factory=list, description="YAML rubric files beside the built-ins"
    )
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    ratelimit: RateLimitSettings = Field(default_factory=RateLimitSettings)
    judge_cache: CacheSettings = Field(
        default_factory=_judge_cache, description="verdicts by rendered request (memory | redis | none)"
    )
    cache_nondeterministic: bool = Field(
        default=False, description="also cache verdicts sampled with temperature > 0 and no seed"
    )
    sample_budget_s: float | None = Field(
        default=None, gt=0, description="time one sample may take inside the grader; default deadline_s - 1"
    )
    length_window: int = Field(
        default=1024, ge=3, description="samples in the rolling reward-length correlation"
    )
    max_response_chars: int = Field(
        default=24_000,
        ge=256,
        description="characters of a response (and of a pairwise baseline) a judge is shown; the rubric "
        "and the reference are never cut",
    )
    max_response_bytes: int = Field(
        default=48_000,
        ge=1024,
        description="UTF-8 bytes of a response a judge is shown: a bound on its tokens that holds for "
        "any script (a character can be 4 bytes, and a token as little as one byte)",
    )
    overlong: Literal["lowest", "cut_middle"] = Field(
        default="lowest",
        description="a response over max_response_chars or max_response_bytes: `lowest` gets the "
        "rubric's lowest reward without a judge call (status OK, judge/overlong); `cut_middle` shows "
        "the judge its start and end (judge/response_cut), so text in the middle costs nothing",
    )
    response_failures: Literal["lowest", "fallback"] = Field(
        default="lowest",
        description="failures a response can cause (no readable verdict, a refusal, a reply cut at "
        "max_tokens, a request the upstream rejects, content filters): `lowest` makes them a verdict "
        "at the rubric's lowest reward (status OK, flagged); `fallback` makes them failures that get "
        "fallback_reward (a response could then choose the fallback when it beats its verdict)",
    )

    @property
    def budget_s(self) -> float:
        """The grader's own per-sample budget: always inside the kit's deadline."""
        ceiling = max(self.deadline_s - 1.0, self.deadline_s * 0.8)
        return min(self.sample_budget_s, ceiling) if self.sample_budget_s else ceiling

    def per_worker(self, workers: int) -> JudgeServiceSettings:
        """These settings for one of `workers` processes serving them (`workers: N`): each takes
        its share of every limit it enforces alone (upstream concurrency; rpm/tpm unless Redis
        shares the buckets), so the service as a whole keeps the limits configured."""
        share = self.model_copy(deep=True)
        for upstream in share.upstreams:
            upstream.max_concurrency = -(-upstream.max_concurrency // workers)
            if share.ratelimit.backend == "memory":
                upstream.rpm = -(-upstream.rpm // workers)
                upstream.tpm = -(-upstream.tpm // workers)
        return share
