"""Pairwise accuracy over a JSONL of pairs, overall and per subset, checked against a direct forward."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from rich.console import Console

from services.evaluate.rm_eval import PairsJob, evaluate_pairs, rm_eval_command
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings
from testkit.tiny_checkpoints import TinyCheckpoints, sentence
from tests.reward_rm.reference import Reference


def write_pairs(path: Path, ref: Reference) -> dict[str, list[bool]]:
    """Random pairs in two subsets, a tie, and two unusable lines; returns who should win."""
    rng = random.Random(9)
    wins: dict[str, list[bool]] = {"chat": [], "math": []}
    lines = []
    for i in range(24):
        subset = "chat" if i % 3 else "math"
        prompt, chosen, rejected = (sentence(rng, rng.randint(2, 25)) for _ in range(3))
        lines.append(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected, "subset": subset}))
        won = ref.reward(ref.chat_text(prompt, chosen)) > ref.reward(ref.chat_text(prompt, rejected))
        wins[subset].append(won)
    lines.append(json.dumps({"prompt": "p", "chosen": "same", "rejected": "same", "subset": "math"}))
    wins["math"].append(False)  # a tie is not a win
    lines.append("{not json")
    lines.append(json.dumps({"prompt": "p", "chosen": "only one side"}))
    path.write_text("\n".join(lines) + "\n")
    return wins


async def test_accuracy_overall_and_per_subset(tiny: TinyCheckpoints, tmp_path: Path) -> None:
    ref = Reference(tiny.hf)
    pairs = tmp_path / "pairs.jsonl"
    wins = write_pairs(pairs, ref)
    assert 0 < sum(wins["chat"]) < len(wins["chat"])  # a model that always wins or loses proves nothing

    grader = RMGrader(RMServiceSettings(checkpoint=str(tiny.hf)))
    screen = io.StringIO()
    try:
        report = await evaluate_pairs(
            PairsJob(pairs, batch_pairs=5, output=tmp_path / "out.jsonl"),
            grader,
            Console(file=screen, width=100),
        )
    finally:
        await grader.aclose()

    everything = wins["chat"] + wins["math"]
    assert report.overall.pairs == len(everything) and report.overall.correct == sum(everything)
    for subset, expected in wins.items():
        assert report.subsets[subset].correct == sum(expected)
        assert report.subsets[subset].pairs == len(expected)
    assert report.overall.ties == 1 and report.invalid_rows == 2 and report.failed_pairs == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["correct"] for row in written] == [
        w for row in written for w in [row["chosen_reward"] > row["rejected_reward"]]
    ]
    assert len(written) == len(everything)
    assert "rm-eval" in screen.getvalue()  # the progress bar was drawn

    table = io.StringIO()
    report.print(Console(file=table, width=100))
    assert (
        "overall" in table.getvalue() and "chat" in table.getvalue() and "2 unusable rows" in table.getvalue()
    )


def test_command_reads_the_settings_file_and_writes_a_summary(tiny: TinyCheckpoints, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    wins = write_pairs(pairs, Reference(tiny.hf))
    summary = tmp_path / "summary.json"
    config = tmp_path / "arbiter.yaml"  # the whole tree's file: other sections are fine
    config.write_text(f"reward_rules:\n  http_port: 9000\nreward_rm:\n  checkpoint: {tiny.hf}\n")
    report = rm_eval_command(PairsJob(pairs, summary=summary), config=config)
    data = json.loads(summary.read_text())
    assert data["pairs"] == report.overall.pairs == len(wins["chat"]) + len(wins["math"])
    assert set(data["subsets"]) == {"chat", "math"}


async def test_an_unusable_model_fails_pairs_instead_of_scoring_them(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "p", "chosen": "a", "rejected": "b"}) + "\n")
    report = await evaluate_pairs(PairsJob(pairs), RMGrader(RMServiceSettings()), Console(file=io.StringIO()))
    assert report.failed_pairs == 1 and report.overall.pairs == 0
    assert "checkpoint is not set" in report.problems[0]
