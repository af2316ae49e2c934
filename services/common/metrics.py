"""Prometheus metrics of the kit, one registry per served grader.

A registry per server (not the global default) lets several services share one
process under `arbiter serve` and lets tests read exact values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class KitMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "arbiter_requests", "Requests received", ["transport", "endpoint", "code"], registry=r
        )
        self.request_latency = Histogram(
            "arbiter_request_latency_seconds",
            "Request latency, receipt to response",
            ["transport", "endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.samples = Counter("arbiter_samples", "Samples answered, by status", ["status"], registry=r)
        self.cache = Counter("arbiter_cache_lookups", "Cache lookups", ["result"], registry=r)
        self.batch_size = Histogram(
            "arbiter_batch_size", "Samples per grader batch", buckets=_BATCH_BUCKETS, registry=r
        )
        self.batch_latency = Histogram(
            "arbiter_batch_latency_seconds", "Grader time per batch", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.queue_wait = Histogram(
            "arbiter_queue_wait_seconds",
            "Time a sample waited for its batch",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge("arbiter_queue_depth", "Samples waiting for a batch", registry=r)
        self.inflight = Gauge("arbiter_inflight_requests", "Requests being served", registry=r)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def child(self, metric: Counter | Histogram, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: labels() takes a lock and builds a key, a
        measurable cost at thousands of requests a second."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def request_done(self, transport: str, endpoint: str, code: str, seconds: float | None = None) -> None:
        """Count a request answered (and its latency)."""
        self.child(self.requests, transport, endpoint, code).inc()
        if seconds is not None:
            self.child(self.request_latency, transport, endpoint).observe(seconds)


class RegistryForwarder(Collector):
    """Serves another registry's metrics (a grader's own) through the kit's /metrics."""

    def __init__(self, source: CollectorRegistry) -> None:
        self.source = source

    def collect(self) -> Iterable[Metric]:
        return self.source.collect()
