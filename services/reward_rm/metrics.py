"""The reward model's own Prometheus metrics: where a batch's time goes, and padding waste.

Served through the kit's /metrics (the grader's `metrics_registry`). Tokenization is timed
around the input builder; the forward thread's counters (`ForwardStats` of the transformers
backend) are read when /metrics is scraped, so the forward path takes no lock for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

# The forward thread's counters, by attribute of ForwardStats: (metric name, help).
_FORWARD = {
    "forwards": ("arbiter_rm_forwards", "Forward passes of the model"),
    "samples": ("arbiter_rm_forward_samples", "Inputs run through the model (after dedupe)"),
    "real_tokens": ("arbiter_rm_real_tokens", "Tokens of the inputs run through the model"),
    "padded_tokens": ("arbiter_rm_padded_tokens", "Tokens the forwards computed, padding included"),
    "seconds": (
        "arbiter_rm_forward_seconds",
        "Time in the forward thread: batching, copies, model, read-back",
    ),
}


class RMMetrics(Collector):
    def __init__(self, forward_stats: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry()
        self._forward_stats = forward_stats
        self._lock = threading.Lock()
        self._tokenize_s = 0.0
        self._tokenized = 0
        self.registry.register(self)

    def tokenized(self, seconds: float, samples: int) -> None:
        """A batch's inputs were built and tokenized (in a worker thread)."""
        with self._lock:
            self._tokenize_s += seconds
            self._tokenized += samples

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            seconds, samples = self._tokenize_s, self._tokenized
        yield _counter("arbiter_rm_tokenize_seconds", "Time building and tokenizing inputs", seconds)
        yield _counter("arbiter_rm_tokenized_samples", "Samples built and tokenized", samples)
        stats = self._forward_stats()
        if stats is None:  # not loaded yet, or a backend without them (vLLM: its own /metrics)
            return
        for attribute, (name, text) in _FORWARD.items():
            yield _counter(name, text, float(getattr(stats, attribute)))


def _counter(name: str, text: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, text)
    family.add_metric([], value)
    return family
