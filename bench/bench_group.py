"""What grouping costs on /get_reward: 16-sample groups with group terms vs the same samples without.

One gateway process (`python -m services.gateway`, graders in-process, no result cache) serves two
recipes over the same math component: `kimi_length` (group-aware, groups of 16: each sample is
held until its 15 siblings have come, then all are answered with the Kimi length terms) and
`plain` (the same per-sample reward, no group). Each sample is its own POST (OpenRLHF's shape);
a group's 16 samples are sent together and `--groups-at-once` groups are in flight. The two
recipes take turns over `--rounds`, on fresh prompts each time; printed: per-sample latency
(median, p99) and the gateway's CPU per sample (its process tree, /proc), and their ratios.

    python bench/bench_group.py [--groups 32 --rounds 3 --groups-at-once 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_http import cpu_seconds  # noqa: E402

from testkit.procs import ServiceProcess, free_port, percentile  # noqa: E402

SIZE = 16
ANSWERS = ("42", "41", "7")


def config(path: Path) -> None:
    recipe = {"components": {"correct": {"grader": "math", "value": "score"}}, "score": "correct"}
    path.write_text(
        json.dumps(  # YAML is a superset of JSON
            {
                "gateway": {
                    "recipes": {"default": {"components": {"math": {"grader": "math"}}}, "plain": recipe},
                    "group_recipes": {"kimi_length": SIZE},
                }
            }
        )
    )


def group_bodies(rng: random.Random, recipe: str, tag: str) -> list[dict[str, list[str]]]:
    """One group's OpenRLHF bodies: one prompt, 16 chain-of-thought responses of varied length."""
    prompt = f"<|im_start|>user\nProblem {tag}: what is six times seven?<|im_end|>\n<|im_start|>assistant\n"
    label = json.dumps({"recipe": recipe, "answer": "42"})
    bodies = []
    for _ in range(SIZE):
        thinking = " ".join(
            rng.choice(("so", "then", "wait", "six", "times", "seven")) for _ in range(rng.randint(20, 400))
        )
        response = f"<think>{thinking}</think> The answer is \\boxed{{{rng.choice(ANSWERS)}}}<|im_end|>"
        bodies.append({"query": [prompt + response], "prompts": [prompt], "labels": [label]})
    return bodies


async def post(http: httpx.AsyncClient, url: str, body: dict[str, list[str]]) -> float:
    started = time.perf_counter()
    reply = await http.post(url, json=body)
    reply.raise_for_status()
    data = reply.json()
    assert len(data["rewards"]) == 1
    return time.perf_counter() - started


async def run(url: str, groups: list[list[dict[str, list[str]]]], at_once: int) -> list[float]:
    """Every group's samples posted together, `at_once` groups in flight; per-sample latencies."""
    latencies: list[float] = []
    queue = iter(groups)
    limits = httpx.Limits(max_connections=at_once * SIZE, max_keepalive_connections=at_once * SIZE)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:

        async def lane() -> None:
            for bodies in queue:
                latencies.extend(await asyncio.gather(*(post(http, url, b) for b in bodies)))

        await asyncio.gather(*(lane() for _ in range(at_once)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=32, help="groups of 16 per recipe and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--groups-at-once", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        cfg = Path(folder) / "gateway.yaml"
        config(cfg)
        port = free_port()
        env = {
            **os.environ,
            "ARBITER_CONFIG": str(cfg),
            "ARBITER_LOG__LEVEL": "WARNING",
            "ARBITER_CACHE__BACKEND": "none",
            "ARBITER_GATEWAY__HTTP_PORT": str(port),
            "ARBITER_GATEWAY__GRPC_PORT": "-1",
        }
        url = f"http://127.0.0.1:{port}/get_reward"
        with ServiceProcess(
            [sys.executable, "-m", "services.gateway"], f"http://127.0.0.1:{port}/readyz", env=env
        ) as gw:
            warm = [group_bodies(rng, r, f"warm-{r}") for r in ("plain", "kimi_length")]
            asyncio.run(run(url, warm, 2))
            measured: dict[str, dict[str, list[float]]] = {
                r: {"lat": [], "cpu": []} for r in ("plain", "kimi_length")
            }
            for round_ in range(args.rounds):
                for recipe in ("plain", "kimi_length") if round_ % 2 == 0 else ("kimi_length", "plain"):
                    groups = [group_bodies(rng, recipe, f"{round_}-{recipe}-{g}") for g in range(args.groups)]
                    before = cpu_seconds(gw.pid)
                    latencies = asyncio.run(run(url, groups, args.groups_at_once))
                    used = cpu_seconds(gw.pid) - before
                    measured[recipe]["lat"].extend(latencies)
                    measured[recipe]["cpu"].append(1000 * used / len(latencies))
    print(f"{args.groups} groups of {SIZE} x {args.rounds} rounds a recipe, {args.groups_at_once} at once")
    print(f"{'recipe':<14}{'median ms':>11}{'p99 ms':>10}{'CPU ms/sample':>15}")
    summary = {}
    for recipe, m in measured.items():
        summary[recipe] = (
            1000 * statistics.median(m["lat"]),
            1000 * percentile(m["lat"], 99),
            statistics.median(m["cpu"]),
        )
        print(
            f"{recipe:<14}{summary[recipe][0]:>11.1f}{summary[recipe][1]:>10.1f}{summary[recipe][2]:>15.2f}"
        )
    plain, grouped = summary["plain"], summary["kimi_length"]
    print(
        f"grouping / plain: median latency {grouped[0] / plain[0]:.2f}x, p99 {grouped[1] / plain[1]:.2f}x, "
        f"CPU per sample {grouped[2] / plain[2]:.2f}x "
        f"(+{grouped[0] - plain[0]:.1f} ms, +{grouped[2] - plain[2]:.2f} CPU-ms a sample)"
    )


if __name__ == "__main__":
    main()
