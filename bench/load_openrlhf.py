"""OpenRLHF's rollout pattern, replayed against a full local deployment, to show nothing leaks or is lost.

Deployment: redis-server, reward_rules and the gateway as separate processes (the gateway reaches
reward_rules over gRPC; both cache in Redis). Each rollout POSTs N one-sample /get_reward requests
at once, as OpenRLHF's vLLM actors do (aiohttp, a new connection per request, 180 s timeout,
5 attempts 1 s apart), half math (routed by datasource to a math recipe), half format. Every
rollout has fresh samples, so the cache does not answer for the graders.

Reported: samples/s, p50/p99/max latency (first attempt to answer), lost or non-2xx or wrong
answers, and after each rollout the RSS (with child processes) and open fds of every service.

    python bench/load_openrlhf.py [--rollouts 3] [--samples 16384]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from testkit.procs import ServiceProcess, free_port, percentile, rss_mib, start_redis  # noqa: E402

GATEWAY_CONFIG = """
gateway:
  services: {{reward_rules: {{replicas: ["127.0.0.1:{rules_grpc}"]}}}}
  routes:
    - {{datasource: "gsm8k", recipe: math}}
    - {{recipe: format}}
  recipes:
    math:
      components:
        correct: {{grader: math}}
        format: {{grader: format, value: score}}
      formula: "0.9*correct + 0.1*format"
      score: correct
    format:
      components:
        format: {{grader: format}}
"""


@dataclass
class Deployment:
    url: str
    pids: dict[str, int]  # service name -> pid


@dataclass
class RolloutReport:
    samples: int
    seconds: float
    latencies: list[float]
    failures: list[str]  # lost, non-2xx or wrong answers, one line each
    usage: dict[str, tuple[float, int]] = field(default_factory=dict)  # service -> (RSS MiB, fds)

    @property
    def rate(self) -> float:
        return self.samples / self.seconds


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A throwaway redis-server on a free loopback port (as tests/conftest.py starts one)."""
    port = free_port()
    proc = start_redis(port, workdir)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def deployment(workdir: Path, math_workers: int = 1) -> Iterator[Deployment]:
    """redis-server + reward_rules + gateway, each its own process, on free loopback ports."""
    rules_http, rules_grpc, gateway_http = free_port(), free_port(), free_port()
    config = workdir / "arbiter.yaml"
    config.write_text(GATEWAY_CONFIG.format(rules_grpc=rules_grpc))
    with ExitStack() as stack:
        redis_url = stack.enter_context(redis_server(workdir))
        env = {
            **os.environ,
            "ARBITER_CONFIG": str(config),
            "ARBITER_LOG__LEVEL": "WARNING",
            "ARBITER_CACHE__BACKEND": "redis",
            "ARBITER_CACHE__REDIS_URL": redis_url,
        }
        rules = stack.enter_context(
            ServiceProcess(
                [sys.executable, "-m", "services.reward_rules"],
                f"http://127.0.0.1:{rules_http}/readyz",
                env={
                    **env,
                    "ARBITER_REWARD_RULES__HTTP_PORT": str(rules_http),
                    "ARBITER_REWARD_RULES__GRPC_PORT": str(rules_grpc),
                    "ARBITER_REWARD_RULES__MATH__WORKERS": str(math_workers),
                },
            )
        )
        gateway = stack.enter_context(
            ServiceProcess(
                [sys.executable, "-m", "services.gateway"],
                f"http://127.0.0.1:{gateway_http}/readyz",
                env={
                    **env,
                    "ARBITER_GATEWAY__HTTP_PORT": str(gateway_http),
                    "ARBITER_GATEWAY__GRPC_PORT": "-1",
                },
            )
        )
        yield Deployment(
            f"http://127.0.0.1:{gateway_http}", {"reward_rules": rules.pid, "gateway": gateway.pid}
        )


def sample(rollout: int, index: int) -> tuple[dict[str, list[str]], float]:
    """One rollout sample (fresh per rollout) and the reward the recipes must give it."""
    a, b = rollout * 1_000_003 + index, index % 7
    prompt = (
        f"<|im_start|>user\nRollout {rollout}, problem {index}: {a} + {b}?<|im_end|>\n<|im_start|>assistant\n"
    )
    right = index % 3 != 0
    answer = a + b if right else a + b + 1
    if index % 2:  # math recipe: 0.9 * correct + 0.1 * format score
        response = f"<think>Add them. Wait, check.</think> The answer is \\boxed{{{answer}}}<|im_end|>"
        label = f'{{"datasource": "gsm8k", "answer": "{a + b}"}}'
        expected = 1.0 if right else 0.1
    else:  # format recipe
        response = f"<think>step {index}</think> {answer}<|im_end|>" if right else f"{answer}<|im_end|>"
        label, expected = "", 1.0 if right else 0.0
    return {"query": [prompt + response], "prompts": [prompt], "labels": [label]}, expected


async def _burst(url: str, rollout: int, samples: int) -> tuple[float, list[float], list[str]]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, force_close=True)  # a new connection per POST
    timeout = aiohttp.ClientTimeout(total=180)
    go = asyncio.Event()
    latencies: list[float] = []
    failures: list[str] = []

    async def one(session: aiohttp.ClientSession, index: int) -> None:
        payload, expected = sample(rollout, index)
        await go.wait()
        started, last = time.monotonic(), "no attempt"
        for _ in range(5):  # OpenRLHF: 5 attempts, 1 s apart
            try:
                async with session.post(f"{url}/get_reward", json=payload) as reply:
                    if reply.status != 200:
                        last = f"HTTP {reply.status}: {(await reply.text())[:120]}"
                        await asyncio.sleep(1)
                        continue
                    data = await reply.json()
                    latencies.append(time.monotonic() - started)
                    reward = data["rewards"][0]
                    if not (math.isfinite(reward) and abs(reward - expected) < 1e-9):
                        failures.append(f"sample {index}: reward {reward}, expected {expected}")
                    return
            except (TimeoutError, aiohttp.ClientError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(1)
        failures.append(f"sample {index} lost after 5 attempts: {last}")

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks = [asyncio.create_task(one(session, i)) for i in range(samples)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        go.set()
        await asyncio.gather(*tasks)
        return time.monotonic() - started, latencies, failures


def process_usage(pid: int) -> tuple[float, int]:
    """RSS in MiB of the process and its children (math workers), and the process's open fds."""
    return rss_mib(pid), len(os.listdir(f"/proc/{pid}/fd"))


def run_rollout(deployed: Deployment, rollout: int, samples: int) -> RolloutReport:
    seconds, latencies, failures = asyncio.run(_burst(deployed.url, rollout, samples))
    # Let closed connections leave the servers' fd tables: wait until the counts stop moving.
    usage = {name: process_usage(pid) for name, pid in deployed.pids.items()}
    for _ in range(50):
        time.sleep(0.2)
        again = {name: process_usage(pid) for name, pid in deployed.pids.items()}
        settled = all(again[n][1] == usage[n][1] for n in usage)
        usage = again
        if settled:
            break
    return RolloutReport(samples, seconds, latencies, failures, usage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rollouts", type=int, default=3)
    parser.add_argument("--samples", type=int, default=16_384, help="one-sample POSTs per rollout")
    parser.add_argument("--math-workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, deployment(Path(tmp), args.math_workers) as deployed:
        print(f"deployment: redis-server + reward_rules + gateway (pids {deployed.pids}), cache=redis")
        print(f"{args.rollouts} rollouts x {args.samples} one-sample POSTs (aiohttp, new connection each)")
        idle = {name: process_usage(pid) for name, pid in deployed.pids.items()}
        print("before:   " + "  ".join(f"{n} {r:.0f} MiB {f} fds" for n, (r, f) in idle.items()))
        reports = []
        for rollout in range(args.rollouts):
            report = run_rollout(deployed, rollout, args.samples)
            reports.append(report)
            usage = "  ".join(f"{n} {r:.0f} MiB {f} fds" for n, (r, f) in report.usage.items())
            p50, p99 = percentile(report.latencies, 0.5), percentile(report.latencies, 0.99)
            print(
                f"rollout {rollout}: {report.rate:7.0f} samples/s  p50 {p50:.2f} s  p99 {p99:.2f} s"
                f"  max {max(report.latencies, default=0):.2f} s"
                f"  lost/non-2xx/wrong {len(report.failures)}  | {usage}"
            )
            for line in report.failures[:5]:
                print("   ", line)
        total = sum(r.samples for r in reports)
        failed = sum(len(r.failures) for r in reports)
        print(f"total: {total} samples, {failed} lost, non-2xx or wrong")


if __name__ == "__main__":
    main()
