"""Eval sets built in the tests: math rows of every answer kind, written as JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def math_rows(count: int, samples_per_prompt: int = 4) -> list[dict[str, Any]]:
    """A math eval set with unique rows: right, wrong, unboxed and empty answers, two datasources."""
    rows = []
    for i in range(count):
        prompt_no, sample_no = divmod(i, samples_per_prompt)
        answer = prompt_no * 3 + 1
        kind = (prompt_no + sample_no) % 4
        response = {
            0: f"Sample {i}. <think>wait, {answer - 1}+1</think> The answer is \\boxed{{{answer}}}",
            1: f"Sample {i}. I think it is \\boxed{{{answer + 1}}}",
            2: f"Sample {i}. Actually the result is {answer}.",
            3: f"Sample {i}. \\boxed{{\\frac{{{2 * answer}}}{{2}}}}",
        }[kind]
        rows.append(
            {
                "id": i,
                "prompt": f"Problem {prompt_no}: what is {answer - 1} + 1?",
                "response": response,
                "label": str(answer),
                "datasource": "aime" if prompt_no % 3 == 0 else "math500",
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path
