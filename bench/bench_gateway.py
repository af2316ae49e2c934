"""The gateway's cost: samples/s through it over HTTP vs the same grader in-process, and its latency.

One run, same machine, same GRPO-shaped math workload (bench_math's: references x responses
with chain-of-thought, right, wrong, truncated and pathological answers), every target warmed
up first:
- in-process: the math grader called directly, batches of 64 (the raw limit);
- gateway: `python -m services.gateway` (graders in its process), /v1/score batches of 64
  from 4 clients; and the same gateway reaching a separate reward_rules over gRPC;
- latency: one-sample /get_reward (OpenRLHF's shape), sequential, straight to reward_rules vs
  through each gateway: the gateway's added p50/p99.
No caches in the servers (every sample graded). Target: gateway/in-process >= 0.8.

    python bench/bench_gateway.py [--refs 64 --per-ref 16 --latency-requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_math import make_workload  # noqa: E402

from services.common.contract import Sample  # noqa: E402
from services.common.procs import ServiceProcess, free_port, percentile  # noqa: E402

BATCH = 64
CLIENTS = 4


def service(module: str, env: dict[str, str], ready_url: str) -> ServiceProcess:
    env = {**os.environ, "ARBITER_LOG__LEVEL": "WARNING", "ARBITER_CACHE__BACKEND": "none", **env}
    return ServiceProcess([sys.executable, "-m", module], ready_url, env=env)


def with_math_label(samples: Sequence[Sample]) -> list[Sample]:
    return [
        s.model_copy(update={"label": json.dumps({"grader": "math", "answer": s.label})}) for s in samples
    ]


async def in_process(samples: list[Sample]) -> tuple[float, float]:
    """Samples/s of a fresh grader's first pass (cold caches) and of a second pass (warm)."""
    from services.reward_rules.math.grader import MathGrader

    grader = MathGrader()
    await grader.score(samples[:2])  # start the worker pool
    rates = []
    try:
        for _ in range(2):
            started = time.perf_counter()
            for i in range(0, len(samples), BATCH):
                await grader.score(samples[i : i + BATCH])
            rates.append(len(samples) / (time.perf_counter() - started))
        return rates[0], rates[1]
    finally:
        await grader.aclose()


async def over_http(url: str, samples: list[Sample]) -> tuple[float, float]:
    """Samples/s of the server's first pass over the workload (cold caches) and of a second."""
    batches = [samples[i : i + BATCH] for i in range(0, len(samples), BATCH)]

    async def run_all(http: httpx.AsyncClient) -> None:
        queue = iter(batches)

        async def client() -> None:
            for batch in queue:
                body = {"samples": [s.model_dump() for s in batch]}
                reply = await http.post("/v1/score", json=body)
                reply.raise_for_status()
                assert len(reply.json()["results"]) == len(batch)

        await asyncio.gather(*(client() for _ in range(CLIENTS)))

    rates = []
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        for _ in range(2):
            started = time.perf_counter()
            await run_all(http)
            rates.append(len(samples) / (time.perf_counter() - started))
    return rates[0], rates[1]


async def latencies(url: str, samples: list[Sample], count: int) -> list[float]:
    """Sequential one-sample /get_reward, a new connection each (OpenRLHF's pattern)."""
    measured = []
    async with httpx.AsyncClient(
        base_url=url, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)
    ) as http:
        for i in range(count):
            s = samples[i % len(samples)]
            body = {"query": [s.prompt + s.response], "prompts": [s.prompt], "labels": [s.label]}
            started = time.perf_counter()
            reply = await http.post("/get_reward", json=body)
            measured.append((time.perf_counter() - started) * 1000)
            reply.raise_for_status()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--refs", type=int, default=64)
    parser.add_argument("--per-ref", type=int, default=16)
    parser.add_argument("--latency-requests", type=int, default=300)
    args = parser.parse_args()

    plain, _ = make_workload(args.refs, args.per_ref, seed=7)
    labelled = with_math_label(plain)
    print(
        f"workload: {len(plain)} samples ({args.refs} references x {args.per_ref}), "
        "math grader, no server caches"
    )

    rules_http, rules_grpc, gw_http, gw2_http = free_port(), free_port(), free_port(), free_port()
    folder = Path(tempfile.mkdtemp())
    gateway_config = (
        "gateway:\n  routes: [{recipe: math}]\n  recipes: {math: {components: {correct: {grader: math}}}}\n"
    )
    local_cfg, remote_cfg = folder / "local.yaml", folder / "remote.yaml"
    local_cfg.write_text(gateway_config)
    remote_cfg.write_text(
        gateway_config + f"  services: {{reward_rules: {{replicas: ['127.0.0.1:{rules_grpc}']}}}}\n"
    )

    inproc = asyncio.run(in_process(labelled))
    gateway_env = {"ARBITER_GATEWAY__GRPC_PORT": "-1"}
    rules_env = {
        "ARBITER_REWARD_RULES__HTTP_PORT": str(rules_http),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(rules_grpc),
    }
    local_env = {**gateway_env, "ARBITER_CONFIG": str(local_cfg), "ARBITER_GATEWAY__HTTP_PORT": str(gw_http)}
    remote_env = {
        **gateway_env,
        "ARBITER_CONFIG": str(remote_cfg),
        "ARBITER_GATEWAY__HTTP_PORT": str(gw2_http),
    }
    with (
        service("services.reward_rules", rules_env, f"http://127.0.0.1:{rules_http}/readyz"),
        service("services.gateway", local_env, f"http://127.0.0.1:{gw_http}/readyz"),
        service("services.gateway", remote_env, f"http://127.0.0.1:{gw2_http}/readyz"),
    ):
        local_rate = asyncio.run(over_http(f"http://127.0.0.1:{gw_http}", plain))
        remote_rate = asyncio.run(over_http(f"http://127.0.0.1:{gw2_http}", plain))
        direct = asyncio.run(latencies(f"http://127.0.0.1:{rules_http}", labelled, args.latency_requests))
        via_local = asyncio.run(latencies(f"http://127.0.0.1:{gw_http}", plain, args.latency_requests))
        via_remote = asyncio.run(latencies(f"http://127.0.0.1:{gw2_http}", plain, args.latency_requests))

    print(f"{'path':<44} {'cold/s':>8} {'ratio':>6} {'warm/s':>8} {'ratio':>6}")
    rows = [
        ("math grader in-process (batches of 64)", inproc),
        ("gateway over HTTP, graders in its process", local_rate),
        ("gateway over HTTP -> reward_rules over gRPC", remote_rate),
    ]
    for name, (cold, warm) in rows:
        print(f"{name:<44} {cold:>8.0f} {cold / inproc[0]:>5.2f}x {warm:>8.0f} {warm / inproc[1]:>5.2f}x")
    print("(cold: first pass, every reference and answer new to the grader's workers; warm: second pass)")
    print(f"\none-sample /get_reward, sequential, {args.latency_requests} requests: latency ms")
    print(f"{'target':<44} {'p50':>8} {'p99':>8} {'added p50':>10} {'added p99':>10}")
    base50, base99 = statistics.median(direct), percentile(direct, 0.99)
    for name, values in [
        ("reward_rules directly", direct),
        ("gateway, graders in its process", via_local),
        ("gateway -> reward_rules over gRPC", via_remote),
    ]:
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        print(f"{name:<44} {p50:>8.2f} {p99:>8.2f} {p50 - base50:>+10.2f} {p99 - base99:>+10.2f}")


if __name__ == "__main__":
    main()
