"""judge_proxy throughput against a fake chat-completions server: samples/s vs the ideal.

A fake upstream (tests/judge_proxy/fake_openai.py, its own process) answers every request after
`--latency` seconds; the judge may keep `--cap` requests in flight. The ideal is cap / latency
samples/s; the run sends `--samples` distinct one-sample requests at once through the kit's
scoring engine (as OpenRLHF does: micro-batcher, judge grader, HTTP to the upstream), and prints
the ratio (target >= 0.9). For scale it also prints the same numbers for a bare aiohttp client
posting the judge's own request bodies to the same server with the same cap (the ceiling of
this machine, where the fake server and the client share the cores), and the judge's slot use:
its rate against cap / (the mean upstream latency it measured). Then the same samples again,
one at a time: every verdict comes from the judge cache, and it prints that path's p50 latency.

    python bench/bench_judge.py [--samples 2000] [--latency 0.05] [--cap 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

from arbiter.contract import Sample, Status
from services.judge_proxy.build import build_grader
from services.judge_proxy.grader import JudgeGrader
from services.judge_proxy.rubrics import ScoreModelRubric
from services.judge_proxy.settings import JudgeServiceSettings, UpstreamSettings
from services.scoring.engine import ScoringEngine

ROOT = Path(__file__).resolve().parent.parent


def start_fake(latency: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.judge_proxy.fake_openai", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, int(line.split()[1])


async def bare_client(port: int, bodies: list[bytes], cap: int) -> float:
    """Samples/s of a bare aiohttp client posting the judge's own request bodies, `cap` in flight."""
    import aiohttp

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=cap)) as session:

        async def one(body: bytes) -> None:
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()

        await asyncio.gather(*(one(body) for body in bodies[:cap]))
        started = time.perf_counter()
        await asyncio.gather(*(one(body) for body in bodies))
        return len(bodies) / (time.perf_counter() - started)


def judge_bodies(grader: JudgeGrader, samples: list[Sample]) -> list[bytes]:
    """The exact bodies the judge sends for `samples` (rendered default rubric, logprobs on)."""
    bodies = []
    for sample in samples:
        name, context = grader.resolve(sample)
        rubric = grader.rubrics[name]
        assert isinstance(rubric, ScoreModelRubric)
        request = grader.evaluator.request(rubric, context)
        bodies.append(orjson.dumps(request.body("fake-judge", logprobs=True)))
    return bodies


async def run(samples: int, latency: float, cap: int) -> None:
    proc, port = start_fake(latency)
    try:
        settings = JudgeServiceSettings(
            upstreams=[
                UpstreamSettings(
                    base_url=f"http://127.0.0.1:{port}/v1", model="fake-judge", max_concurrency=cap
                )
            ],
            deadline_s=120,
        )
        # No kit result cache: every sample reaches the judge.
        grader = build_grader(settings)
        engine = ScoringEngine(grader, settings)
        await engine.start()
        batch = [Sample(prompt=f"question {i}", response=f"answer number {i}") for i in range(samples)]
        await engine.score([Sample(prompt="warm-up", response=f"w{i}") for i in range(cap)])

        started = time.perf_counter()
        results = await asyncio.gather(*(engine.score([s]) for s in batch))
        elapsed = time.perf_counter() - started
        ok = sum(r[0].status is Status.OK for r in results)
        rate = samples / elapsed
        ideal = cap / latency
        print(f"upstream: fake chat-completions, {latency * 1000:.0f} ms per request, cap {cap} in flight")
        print(f"miss path: {samples} samples ({ok} OK) in {elapsed:.2f}s = {rate:.0f} samples/s")
        print(f"ideal (cap / latency): {ideal:.0f} samples/s; ratio {rate / ideal:.3f} (target >= 0.9)")
        registry = grader.metrics_registry
        total = registry.get_sample_value(
            "arbiter_judge_upstream_latency_seconds_sum", {"upstream": "fake-judge"}
        )
        count = registry.get_sample_value(
            "arbiter_judge_upstream_latency_seconds_count", {"upstream": "fake-judge"}
        )
        measured = total / count
        print(
            f"upstream latency measured by the judge: mean {measured * 1000:.1f} ms; "
            f"slot use {rate / (cap / measured):.3f} of cap / measured latency"
        )
        bodies = judge_bodies(
            grader, [Sample(prompt=f"q {i}", response=f"other answer {i}") for i in range(samples)]
        )
        bare = await bare_client(port, bodies, cap)
        print(
            f"bare aiohttp client, same bodies, same server, same cap: {bare:.0f} samples/s; "
            f"ratio {bare / ideal:.3f}; judge / bare {rate / bare:.3f}"
        )

        latencies = []
        for sample in batch:
            t0 = time.perf_counter()
            (result,) = await engine.score([sample])
            latencies.append(time.perf_counter() - t0)
            assert result.logs["judge/cache_hits"] == 1.0, result
        latencies.sort()
        p50 = statistics.median(latencies) * 1000
        p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
        print(
            f"cache-hit path (judge cache, one sample at a time, engine included): "
            f"p50 {p50:.2f} ms, p99 {p99:.2f} ms"
        )
        await engine.stop()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--cap", type=int, default=64)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(run(args.samples, args.latency, args.cap))
    except ImportError:
        asyncio.run(run(args.samples, args.latency, args.cap))


if __name__ == "__main__":
    main()
