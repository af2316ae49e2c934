"""The kit's /get_reward under OpenRLHF's load shape, beside a serial baseline.

OpenRLHF (>= 0.9.1) POSTs one sample per request, hundreds at once, each on a new
connection (aiohttp, a session per attempt). Its own `serve_rm.py` answers them the
simple way: a FastAPI handler that scores each request as it comes, synchronously.
This bench serves the same grader both ways, each in its own process, and drives both
with the same aiohttp client at the same concurrency, in one run:

    python bench/bench_kit.py                  # 512 clients, both workloads
    python bench/bench_kit.py --clients 64 --requests 2000 --workload mlp

Workloads:
- mlp:    a model-like grader: hashed bag-of-words features through a 4-layer 2048-wide
          MLP in numpy (weights ~64 MB, so a forward costs about the same for 1 or 16
          samples, as a reward model's does). The kit batches it; the baseline cannot.
- format: the format/length rules grader: microseconds per sample, so the HTTP stack is
          all there is to measure.
Prints req/s and p50/p99 latency per server and the kit/baseline ratios. The target is
>= 3x the baseline's throughput at 512 clients with p99 no worse, on the mlp workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

# Module level: FastAPI resolves the handler's string annotations against these globals.
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.openrlhf_client import post_all  # noqa: E402
from testkit.procs import ServiceProcess, free_port, percentile  # noqa: E402

PROMPT = "<|im_start|>user\nHow many primes are below 30?<|im_end|>\n<|im_start|>assistant\n"
HIDDEN = 2048
LAYERS = 4


# -- the graders --------------------------------------------------------------------------


class MLPReward:
    """A stand-in reward model with a real forward pass; deterministic per text."""

    def __init__(self) -> None:
        import numpy as np

        rng = np.random.default_rng(0)
        self.np = np
        self.weights = [
            rng.standard_normal((HIDDEN, HIDDEN), dtype=np.float32) / np.float32(HIDDEN**0.5)
            for _ in range(LAYERS)
        ]
        self.head = rng.standard_normal(HIDDEN, dtype=np.float32)

    def features(self, texts: Sequence[str]) -> object:
        np = self.np
        x = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.split():
                x[row, zlib.crc32(word.encode()) % HIDDEN] += 1.0
        return x

    def forward(self, texts: Sequence[str]) -> list[float]:
        x = self.features(texts)
        for w in self.weights:
            x = self.np.tanh(x @ w)
        return [float(v) for v in x @ self.head]


def make_kit_grader(workload: str) -> object:
    from arbiter.contract import GraderInfo, Result, Sample
    from services.reward_rules.format_rules import FormatGrader

    if workload == "format":
        return FormatGrader()

    class KitMLPGrader:
        def __init__(self) -> None:
            self.model = MLPReward()
            self._info = GraderInfo(name="bench-mlp", version="1", config_hash="bench")

        @property
        def info(self) -> GraderInfo:
            return self._info

        @property
        def log_keys(self) -> Sequence[str]:
            return ()

        async def score(self, samples: Sequence[Sample]) -> list[Result]:
            # numpy releases the GIL: the forward runs beside the event loop, not in it.
            values = await asyncio.to_thread(self.model.forward, [s.prompt + s.response for s in samples])
            return [Result(reward=v, score=v) for v in values]

        async def aclose(self) -> None:
            return None

    return KitMLPGrader()


# -- the servers (each runs in its own process) --------------------------------------------


def serve_baseline(workload: str, port: int) -> None:
    """OpenRLHF serve_rm.py's shape: score each request synchronously inside the handler."""
    import uvicorn

    from arbiter.contract import Sample
    from services.reward_rules.format_rules import FormatGrader

    app = FastAPI()
    if workload == "mlp":
        model = MLPReward()

        def score(queries: list[str], prompts: list[str]) -> list[float]:
            return model.forward(queries)
    else:
        grader = FormatGrader()

        def score(queries: list[str], prompts: list[str]) -> list[float]:
            return [
                grader.grade(Sample(prompt=p, response=q[len(p) :])).reward
                for q, p in zip(queries, prompts, strict=True)
            ]

    @app.post("/get_reward")
    async def get_reward(request: Request) -> JSONResponse:
        data = await request.json()
        rewards = score(data["query"], data.get("prompts") or [""] * len(data["query"]))
        return JSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": {}})

    @app.get("/readyz")
    async def ready() -> dict[str, str]:
        return {"status": "ready"}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="httptools", backlog=4096)


def serve_kit(workload: str, port: int) -> None:
    from services.common.settings import CacheSettings, ServerSettings
    from services.transports.server import GraderServer, run_until_signalled

    settings = ServerSettings(host="127.0.0.1", http_port=port, grpc_port=-1)
    if workload == "mlp":  # one forward at a time uses the model best, as a GPU server would
        settings.batch.max_concurrent_batches = 1
        settings.batch.max_batch_size = 256
    # No cache: every request is graded, as in the baseline.
    server = GraderServer("bench", make_kit_grader(workload), settings, CacheSettings(backend="none"))  # type: ignore[arg-type]
    try:
        import uvloop

        uvloop.run(run_until_signalled([server]))
    except ImportError:
        asyncio.run(run_until_signalled([server]))


# -- the load -----------------------------------------------------------------------------


def kit_or_baseline(kind: str, workload: str, port: int) -> ServiceProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    argv = [sys.executable, __file__, "--serve", kind, "--workload", workload, "--port", str(port)]
    return ServiceProcess(argv, f"http://127.0.0.1:{port}/readyz", env=env, stop_signal=signal.SIGINT)


async def drive(url: str, clients: int, requests: int) -> dict[str, float]:
    """`clients` concurrent loops, one sample per POST, a new session per request (as OpenRLHF)."""
    bodies = [
        {
            "query": [PROMPT + f"<think>Let me count. {i} wait, recount</think> The answer is {10 + i % 3}"],
            "prompts": [PROMPT],
            "labels": [""],
        }
        for i in range(requests)
    ]
    replies, elapsed = await post_all(url, bodies, clients)
    latencies = [r.latency_s for r in replies]
    return {
        "rps": requests / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "errors": float(sum(not r.ok for r in replies)),
    }


def run_pair(workload: str, clients: int, requests: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for kind in ("baseline", "kit"):
        port = free_port()
        with kit_or_baseline(kind, workload, port):
            url = f"http://127.0.0.1:{port}/get_reward"
            asyncio.run(drive(url, min(clients, 64), min(requests, 500)))  # warm-up
            results[kind] = asyncio.run(drive(url, clients, requests))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=512)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--workload", choices=["mlp", "format", "all"], default="all")
    parser.add_argument("--serve", choices=["baseline", "kit"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print one JSON object as well")
    args = parser.parse_args()

    if args.serve:
        (serve_kit if args.serve == "kit" else serve_baseline)(args.workload, args.port)
        return

    workloads = ["mlp", "format"] if args.workload == "all" else [args.workload]
    report: dict[str, object] = {"clients": args.clients, "requests": args.requests}
    print(f"/get_reward, 1 sample per request, {args.clients} concurrent clients, {args.requests} requests")
    print(f"{'workload':<8} {'server':<9} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7}")
    for workload in workloads:
        pair = run_pair(workload, args.clients, args.requests)
        for kind, r in pair.items():
            print(
                f"{workload:<8} {kind:<9} {r['rps']:>9.0f} {r['p50_ms']:>9.1f} {r['p99_ms']:>9.1f} "
                f"{int(r['errors']):>7}"
            )
        ratio = pair["kit"]["rps"] / pair["baseline"]["rps"]
        p99 = pair["kit"]["p99_ms"] / pair["baseline"]["p99_ms"]
        print(
            f"{workload:<8} ratio     throughput kit/baseline = {ratio:.2f}x, p99 kit/baseline = {p99:.2f}x"
        )
        report[workload] = {**pair, "throughput_ratio": ratio, "p99_ratio": p99}
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
