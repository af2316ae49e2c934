"""Several worker processes on one port (`workers: N`): real `arbiter serve` processes, real sockets.

What must hold: the kernel spreads OpenRLHF's new connections over the workers, /metrics and
/v1/stats describe all of them (not the one a scrape lands on), a worker that dies is replaced
while its siblings answer, and the supervisor stops (or dies) with its workers.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from arbiter.contract import Result, Sample, Status
from services.common.fleet import merge_metrics
from services.gateway.stats import RollingStats
from testkit.openrlhf_client import post_all
from testkit.procs import ServiceProcess, children, free_port

ARBITER = [sys.executable, "-m", "services.cli"]


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def _rundir(worker_pid: int) -> Path:
    argv = Path(f"/proc/{worker_pid}/cmdline").read_bytes().split(b"\0")
    return Path(argv[argv.index(b"--rundir") + 1].decode())


def _ask(sock_path: Path, view: str) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(sock_path))
        sock.sendall(view.encode() + b"\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _bodies(count: int, offset: int = 0) -> list[dict[str, Any]]:
    out = []
    for i in range(offset, offset + count):
        prompt = f"Question {i}: what is {i} + {i}?"
        out.append(
            {
                "query": [f"{prompt} The answer is \\boxed{{{2 * i}}}"],
                "prompts": [prompt],
                "labels": [str(2 * i)],
            }
        )
    return out


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServiceProcess, str, str]]:
    gateway, rules = free_port(), free_port()
    env = {
        **os.environ,
        "ARBITER_GATEWAY__HTTP_PORT": str(gateway),
        "ARBITER_GATEWAY__GRPC_PORT": "-1",
        "ARBITER_REWARD_RULES__HTTP_PORT": str(rules),
        "ARBITER_REWARD_RULES__GRPC_PORT": "0",
        "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
        "ARBITER_LOG__LEVEL": "WARNING",
    }
    gateway_url = f"http://127.0.0.1:{gateway}"
    proc = ServiceProcess(
        [*ARBITER, "serve", "reward_rules", "gateway", "--workers", "2"],
        f"{gateway_url}/readyz",
        env=env,
        start_timeout_s=120,
    )
    with proc:
        _wait_covered(f"{gateway_url}/metrics")
        yield proc, gateway_url, f"http://127.0.0.1:{rules}"


def _wait_covered(url: str, timeout_s: float = 60.0) -> httpx.Response:
    """/metrics once every worker is in the view (they start side by side)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            reply = httpx.get(url, timeout=5)
            if reply.headers.get("x-arbiter-workers") == "2/2":
                return reply
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} never covered both workers")
        time.sleep(0.2)


def test_connections_spread_and_views_merge(served: tuple[ServiceProcess, str, str]) -> None:
    proc, gateway, rules = served
    replies, _ = asyncio.run(post_all(f"{gateway}/get_reward", _bodies(300), clients=16))
    assert all(r.ok for r in replies)
    assert all(r.data is not None and r.data["rewards"] == [1.0] for r in replies)

    workers = children(proc.pid)
    assert len(workers) == 2
    rundir = _rundir(workers[0])
    own = [
        _metric(
            _ask(rundir / f"{i}.sock", "gateway/metrics").decode(),
            "arbiter_requests_total",
            endpoint="/get_reward",
            code="200",
        )
        for i in range(2)
    ]
    assert sum(own) == 300
    assert min(own) > 0  # the kernel gave each worker connections: neither sat idle

    for _ in range(4):  # whichever worker a scrape lands on, it reports both
        merged = httpx.get(f"{gateway}/metrics", timeout=5)
        assert merged.headers["x-arbiter-workers"] == "2/2"
        assert _metric(merged.text, "arbiter_requests_total", endpoint="/get_reward", code="200") == 300
        assert _metric(merged.text, "arbiter_samples_total", status="OK") == 300

        stats = httpx.get(f"{gateway}/v1/stats", timeout=5)
        assert stats.headers["x-arbiter-workers"] == "2/2"
        summary = stats.json()
        assert summary["samples_seen"] == 300
        assert summary["window"] == 300
        assert summary["accuracy"] == 1.0

    # the reward_rules service (gRPC on a shared port too) serves and merges on its own
    assert httpx.get(f"{rules}/metrics", timeout=5).headers["x-arbiter-workers"] == "2/2"


def test_a_dead_worker_is_replaced_while_its_sibling_serves(served: tuple[ServiceProcess, str, str]) -> None:
    proc, gateway, _ = served
    first, second = children(proc.pid)
    os.kill(first, signal.SIGKILL)
    # OpenRLHF's client retries a refused or reset connection: nothing is lost meanwhile
    replies, _ = asyncio.run(post_all(f"{gateway}/get_reward", _bodies(100, 1000), clients=8))
    assert all(r.ok for r in replies)
    _wait_covered(f"{gateway}/metrics")
    now = children(proc.pid)
    assert second in now and first not in now and len(now) == 2


def test_sigterm_stops_every_worker_and_cleans_up(served: tuple[ServiceProcess, str, str]) -> None:
    proc, _, _ = served
    workers = children(proc.pid)
    rundir = _rundir(workers[0])
    assert proc.stop() == 0
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not rundir.exists()


def test_workers_die_with_a_killed_supervisor(served: tuple[ServiceProcess, str, str]) -> None:
    proc, gateway, _ = served
    workers = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{gateway}/healthz", timeout=2)


def test_a_taken_port_is_an_error_before_any_worker_starts() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {
            **os.environ,
            "ARBITER_REWARD_RULES__HTTP_PORT": str(port),
            "ARBITER_REWARD_RULES__GRPC_PORT": "-1",
        }
        done = subprocess.run(
            [*ARBITER, "serve", "reward_rules", "--workers", "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert "cannot start" in done.stderr and "in use" in done.stderr


# --- the merges, on exact values -----------------------------------------------------------------


def _registry(requests: int, inflight: int, latencies: list[float]) -> bytes:
    registry = CollectorRegistry()
    counter = Counter("arbiter_requests", "Requests", ["code"], registry=registry)
    counter.labels("200").inc(requests)
    Gauge("arbiter_inflight_requests", "In flight", registry=registry).set(inflight)
    histogram = Histogram("arbiter_latency_seconds", "Latency", buckets=(0.1, 1.0), registry=registry)
    for value in latencies:
        histogram.observe(value)
    return generate_latest(registry)


def test_merged_metrics_are_sums() -> None:
    merged = merge_metrics([_registry(3, 1, [0.05, 0.5]), _registry(4, 2, [2.0])]).decode()
    assert _metric(merged, "arbiter_requests_total", code="200") == 7
    assert _metric(merged, "arbiter_inflight_requests") == 3
    assert _metric(merged, "arbiter_latency_seconds_count") == 3
    assert _metric(merged, "arbiter_latency_seconds_bucket", le="0.1") == 1
    assert _metric(merged, "arbiter_latency_seconds_bucket", le="1.0") == 2
    assert _metric(merged, "arbiter_latency_seconds_bucket", le="+Inf") == 3
    assert _metric(merged, "arbiter_latency_seconds_sum") == pytest.approx(2.55)
    assert "# TYPE arbiter_requests_total counter" in merged


def _observe(stats: RollingStats, rewards: list[float]) -> None:
    for reward in rewards:
        sample = Sample(response="x", label=json.dumps({"datasource": "gsm8k"}))
        result = Result(
            reward=reward,
            score=reward,
            status=Status.OK,
            logs={"response/words": 10.0, "reflect/wait": 1.0, "reflect/any": 1.0},
        )
        stats.observe([sample], [result])
        time.sleep(0.001)  # distinct arrival times


def test_merged_stats_are_the_joined_window() -> None:
    one, two, whole = RollingStats(8), RollingStats(8), RollingStats(8)
    rewards = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    for index, reward in enumerate(rewards):  # interleaved, as the kernel spreads connections
        _observe(one if index % 3 else two, [reward])
        _observe(whole, [reward])
    merged = one.merged([one.export(), two.export()])
    expected = whole.summary()
    assert merged["samples_seen"] == 12 == expected["samples_seen"]
    assert merged["window"] == 8
    for key in (
        "reward_mean",
        "reward_std",
        "accuracy",
        "accuracy_by_datasource",
        "reflection_rate",
        "statuses",
    ):
        assert merged[key] == expected[key], key


def test_judge_workers_keep_the_services_upstream_cap(tmp_path: Path) -> None:
    """Each of N workers takes 1/N of the upstream's max_concurrency: the judge service as a whole
    never has more calls in flight than configured, however the kernel spreads its clients."""
    from tests.judge_proxy.fake_openai import FakeOpenAI

    async def scenario() -> tuple[int, int]:
        async with FakeOpenAI(latency_s=0.05) as fake:
            port = free_port()
            config = tmp_path / "judge.yaml"
            upstream = f"{{base_url: '{fake.url}', model: fake, max_concurrency: 4}}"
            config.write_text(f"judge_proxy:\n  upstreams:\n    - {upstream}\n")
            env = {
                **os.environ,
                "ARBITER_CONFIG": str(config),
                "ARBITER_WORKERS": "2",
                "ARBITER_JUDGE_PROXY__HTTP_PORT": str(port),
                "ARBITER_JUDGE_PROXY__GRPC_PORT": "-1",
                "ARBITER_LOG__LEVEL": "WARNING",
            }
            argv = [sys.executable, "-m", "services.judge_proxy"]
            url = f"http://127.0.0.1:{port}"
            with ServiceProcess(argv, f"{url}/readyz", env=env, start_timeout_s=120):
                await asyncio.to_thread(_wait_covered, f"{url}/metrics")
                label = json.dumps({"grader": "judge"})
                bodies = [
                    {"query": [f"Q{i}? A{i}."], "prompts": [f"Q{i}?"], "labels": [label]} for i in range(60)
                ]
                replies, _ = await post_all(f"{url}/get_reward", bodies, clients=24)
            graded = sum(bool(r.data and r.data["extra_logs"]["status/ok"] == [1.0]) for r in replies)
            return graded, fake.peak_inflight

    graded, peak = asyncio.run(scenario())
    assert graded == 60
    assert 2 <= peak <= 4


def test_a_siblings_large_part_arrives_whole(tmp_path: Path) -> None:
    """A view's part comes over the socket in several reads (a full stats window is megabytes):
    the gatherer gets all of it, never the first chunk."""
    from services.common.fleet import Fleet

    big = bytes(range(256)) * 20_000  # 5 MB

    async def scenario() -> list[bytes]:
        one, two = Fleet(tmp_path, 0, 2), Fleet(tmp_path, 1, 2)
        one.provide("gateway/stats", lambda: b"own")
        two.provide("gateway/stats", lambda: big)
        await one.start()
        await two.start()
        try:
            return (await one.gather("gateway/stats")).parts
        finally:
            await one.stop()
            await two.stop()

    assert asyncio.run(scenario()) == [b"own", big]
