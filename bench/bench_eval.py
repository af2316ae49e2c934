"""Eval-set scoring: `arbiter score` in-process vs the plain loop people write, rows/s.

    .venv/bin/python bench/bench_eval.py [--prompts 250] [--samples 16] [--seed 0]

Workload: a MATH-style eval set of `prompts` x `samples` chain-of-thought responses (right
answers in several forms, wrong answers, answers without a box), written as JSONL.
`arbiter score` runs as a user runs it (a subprocess, wall time including start-up and the
summary/report); the loop builds the same MathGrader once and awaits `grader.score([sample])`
row by row, writing each result as JSONL: the script people write around a reward function.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.common.contract import Sample
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=250)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = eval_set(args.prompts, args.samples, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "eval.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
        began = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "services.cli",
                "score",
                str(source),
                "-o",
                str(Path(tmp) / "out.jsonl"),
                "--grader",
                "math",
            ],
            capture_output=True,
            text=True,
        )
        arbiter_s = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        summary = json.loads((Path(tmp) / "out.summary.json").read_text())
        began = time.perf_counter()
        asyncio.run(plain_loop(rows, Path(tmp) / "loop.jsonl"))
        loop_s = time.perf_counter() - began
        loop_rewards = [
            json.loads(line)["reward"] for line in (Path(tmp) / "loop.jsonl").read_text().splitlines()
        ]
        ours = [json.loads(line)["reward"] for line in (Path(tmp) / "out.jsonl").read_text().splitlines()]
    print(f"eval set: {len(rows)} rows ({args.prompts} prompts x {args.samples} samples), math grader")
    print(
        f"arbiter score (in-process, incl. start-up, summary, report): {arbiter_s:6.2f} s  "
        f"{len(rows) / arbiter_s:8.1f} rows/s"
    )
    print(
        f"plain loop, one row at a time:                             {loop_s:6.2f} s  "
        f"{len(rows) / loop_s:8.1f} rows/s"
    )
    print(f"ratio (arbiter / loop): {loop_s / arbiter_s:.2f}x")
    print(
        f"same rewards: {ours == loop_rewards}; pass@1 {summary['overall']['pass@1']:.4f}, "
        f"pass@{summary['ks'][-1]} {summary['overall']['pass@k'][str(summary['ks'][-1])]['value']:.4f}, "
        f"maj@{summary['ks'][-1]} {summary['overall']['maj@k'][str(summary['ks'][-1])]['value']:.4f}"
    )


if __name__ == "__main__":
    main()
