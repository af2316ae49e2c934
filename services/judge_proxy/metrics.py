"""The judge's own Prometheus metrics, in a registry of its own.

The kit serves its registry at /metrics; `RegistryForwarder` lets it serve this one too
(register it into the kit's registry), without name clashes across services in one process.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)


class JudgeMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.upstream_requests = Counter(
            "arbiter_judge_upstream_requests",
            "HTTP attempts to judge upstreams, by outcome",
            ["upstream", "outcome"],
            registry=r,
        )
        self.upstream_latency = Histogram(
            "arbiter_judge_upstream_latency_seconds",
            "Latency of one HTTP attempt to an upstream",
            ["upstream"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "arbiter_judge_tokens", "Tokens reported by upstreams", ["upstream", "kind"], registry=r
        )
        self.cost = Counter(
            "arbiter_judge_cost_usd", "Estimated cost from the configured prices", ["upstream"], registry=r
        )
        self.retries = Counter(
            "arbiter_judge_retries", "Attempts after the first, by reason", ["upstream", "reason"], registry=r
        )
        self.fallbacks = Counter(
            "arbiter_judge_fallbacks", "Calls answered by an upstream other than the first", registry=r
        )
        self.cooldown = Gauge(
            "arbiter_judge_upstream_cooling", "1 while an upstream gets no traffic", ["upstream"], registry=r
        )
        self.ratelimit_wait = Histogram(
            "arbiter_judge_ratelimit_wait_seconds",
            "Time spent waiting for rpm/tpm capacity",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.verdict_failures = Counter(
            "arbiter_judge_verdict_failures",
            "Judge replies with no usable verdict (parse failures, refusals)",
            ["rubric", "kind"],
            registry=r,
        )
        self.cache = Counter(
            "arbiter_judge_cache_lookups",
            "Judge-call cache: hit, miss, coalesced (joined an identical call in flight), bypass",
            ["result"],
            registry=r,
        )
        self.length_correlation = Gauge(
            "arbiter_judge_reward_length_correlation",
            "Pearson correlation of reward and response length (words): last batch, rolling window",
            ["window"],
            registry=r,
        )
