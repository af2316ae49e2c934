"""Horizontal scaling: math-grading samples/s through the gateway with 1, then 2 reward_rules replicas.

Every piece is its own process, as deployed: N reward_rules replicas (`python -m
services.reward_rules`), one gateway (`python -m services.gateway`) whose config lists them under
`gateway.services.reward_rules.replicas`, and this client posting batches to the gateway's
/v1/score. Each replica runs `reward_rules.math.workers=1`: one grading process per replica,
so one replica can use one core and two replicas two; with the grader CPU-bound (symbolic
answers against expanded polynomials, every sample distinct, cache off), throughput should
nearly double. On a 2-core machine the gateway and the client share those cores, so the ratio
stays somewhat under 2.

    .venv/bin/python bench/bench_scale.py [--samples 3072] [--batch 64] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import sympy  # type: ignore[import-untyped]
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # testkit/ beside bench/

from testkit.procs import ServiceProcess, free_port


def math_samples(count: int) -> list[dict[str, Any]]:
    """`(av+b)^5` against its expanded LaTeX: equal only after real algebra, each one distinct.

    Coefficients stay below 1e8 (a, b <= 20); the variable's name makes more distinct samples.
    """
    combos = [(v, a, b) for v in "xyztuvws" for a in range(1, 21) for b in range(1, 21)]
    if count > len(combos):
        raise SystemExit(f"at most {len(combos)} distinct samples")
    samples = []
    for name, a, b in combos[:count]:
        expanded = sympy.latex(sympy.expand((a * sympy.Symbol(name) + b) ** 5))
        samples.append(
            {
                "prompt": f"Expand ({a}{name}+{b})^5.",
                "response": f"<think>binomial theorem</think> \\boxed{{({a}{name}+{b})^5}}",
                "label": expanded,
                "metadata": {},
            }
        )
    return samples


@contextlib.contextmanager
def deployment(replicas: int, folder: Path) -> Iterator[str]:
    """N reward_rules processes and a gateway routing math to them; yields the gateway URL."""
    rules_env = {
        "ARBITER_CACHE__BACKEND": "none",
        "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
        "ARBITER_REWARD_RULES__MATH__DEADLINE_S": "30",
        "ARBITER_REWARD_RULES__BATCH__MAX_CONCURRENT_BATCHES": "2",
    }
    with contextlib.ExitStack() as stack:
        targets = []
        for _ in range(replicas):
            http, grpc = free_port(), free_port()
            env = {
                **base_env(),
                **rules_env,
                "ARBITER_REWARD_RULES__HTTP_PORT": str(http),
                "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc),
            }
            stack.enter_context(
                ServiceProcess(
                    [sys.executable, "-m", "services.reward_rules"],
                    f"http://127.0.0.1:{http}/readyz",
                    env=env,
                )
            )
            targets.append(f"127.0.0.1:{grpc}")
        config = folder / f"gateway-{replicas}.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "cache": {"backend": "none"},
                    "gateway": {
                        "services": {"reward_rules": {"replicas": targets}},
                        "routes": [{"recipe": "math"}],
                        "recipes": {
                            "math": {"components": {"correct": {"grader": "math"}}, "score": "correct"}
                        },
                    },
                }
            )
        )
        http = free_port()
        env = {
            **base_env(),
            "ARBITER_CONFIG": str(config),
            "ARBITER_GATEWAY__HTTP_PORT": str(http),
            "ARBITER_GATEWAY__GRPC_PORT": "-1",
        }
        stack.enter_context(
            ServiceProcess(
                [sys.executable, "-m", "services.gateway"], f"http://127.0.0.1:{http}/readyz", env=env
            )
        )
        yield f"http://127.0.0.1:{http}"


def base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}


async def drive(url: str, samples: list[dict[str, Any]], batch: int, concurrency: int) -> tuple[float, int]:
    """Post every batch (at most `concurrency` in flight); samples/s and how many graded correct."""
    batches = [samples[i : i + batch] for i in range(0, len(samples), batch)]
    queue: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
    for chunk in batches:
        queue.put_nowait(chunk)
    correct = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal correct
        while not queue.empty():
            chunk = queue.get_nowait()
            response = await client.post(f"{url}/v1/score", json={"samples": chunk})
            response.raise_for_status()
            correct += sum(r["reward"] == 1.0 and r["status"] == "OK" for r in response.json()["results"])

    async with httpx.AsyncClient(timeout=120) as client:
        await client.post(f"{url}/v1/score", json={"samples": math_samples(8)})  # warm pools
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return len(samples) / elapsed, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=3072)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    rates: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        samples = math_samples(args.samples)  # the cache is off: each run grades every one
        for replicas in (1, 2):
            with deployment(replicas, Path(folder)) as url:
                rate, correct = asyncio.run(drive(url, samples, args.batch, args.concurrency))
            rates[replicas] = rate
            print(
                f"reward_rules x{replicas} (math.workers=1 each): {rate:8.1f} samples/s  "
                f"correct {correct}/{len(samples)}"
            )
            if correct != len(samples):
                raise SystemExit("some samples were not graded correct: the measurement is void")
    print(f"scaling ratio 2 replicas / 1 replica: {rates[2] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
