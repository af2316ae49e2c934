"""OpenRLHF's rollout pattern against a full deployment (redis-server, reward_rules and gateway as
processes): every sample answered and right, and memory and fds flat across rollouts.

The bench (bench/load_openrlhf.py) runs the same at 3 x 16,384 samples and prints the figures.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from load_openrlhf import Deployment, deployment, run_rollout

from services.common.settings import CacheSettings

ROLLOUTS, SAMPLES = 3, 2000


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path) as running:
        yield running


@pytest.mark.timeout(300)
def test_rollouts_lose_nothing_and_leak_nothing(deployed: Deployment) -> None:
    reports = [run_rollout(deployed, rollout, SAMPLES) for rollout in range(ROLLOUTS)]
    for rollout, report in enumerate(reports):
        assert not report.failures, (rollout, len(report.failures), report.failures[:5])
        assert len(report.latencies) == SAMPLES
    first, last = reports[0].usage, reports[-1].usage
    for name in deployed.pids:
        rss_first, fds_first = first[name]
        rss_last, fds_last = last[name]
        # The first rollout warms pools, channels and caches; after it, nothing per request may stay.
        # Redis connections are pooled up to redis_max_connections and may still be filling up.
        assert fds_last <= fds_first + 8 + CacheSettings().redis_max_connections, (
            name,
            [r.usage[name] for r in reports],
        )
        assert rss_last <= rss_first * 1.15 + 32, (name, [r.usage[name] for r in reports])
