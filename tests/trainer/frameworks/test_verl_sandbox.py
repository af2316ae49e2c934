"""veRL 0.9.1's own SandboxFusion client against reward_rules' `/run_code` (a service process).

A veRL run switches from a SandboxFusion server to Arbiter by changing `reward.sandbox_fusion.url`:
here veRL's loader builds its reward function from that config (no custom function), and its
`sandbox_fusion` code (compute_score, check_correctness, call_sandbox_api) runs stdio and
function-call cases in Python and C++ against the service, as in training. veRL 0.9.1 ships no
SandboxFusion tool (verl/tools has only the generic function tool), so the reward path is the
client there is to drive.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.rules_service import reward_rules_service
from tests.trainer.frameworks.test_verl import compose

pytestmark = pytest.mark.frameworks

verl = pytest.importorskip("verl", reason="runs in .venv-verl (scripts/test-frameworks.sh)")


@pytest.fixture(scope="module")
def rules_url() -> Iterator[str]:
    """`python -m services.reward_rules` on loopback: what `reward.sandbox_fusion.url` points at."""
    with reward_rules_service({"ARBITER_REWARD_RULES__CODE__WORKERS": "4"}) as url:
        yield f"{url}/run_code"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from testkit.tiny_checkpoints import build_tokenizer

    path = tmp_path_factory.mktemp("tiny-tokenizer")
    build_tokenizer().save_pretrained(path)
    return path


def fenced(code: str, language: str = "python") -> str:
    return f"Here is my solution.\n```{language}\n{code}\n```\n"


SUM_PY = "import sys\nprint(sum(map(int, sys.stdin.read().split())))"
STDIO_CASES = json.dumps({"inputs": ["1 2\n", "10 20\n", "-5 5\n"], "outputs": ["3\n", "30\n", "0\n"]})
CALL_CASES = json.dumps({"fn_name": "add", "inputs": ["1\n2", "3\n4"], "outputs": ["3", "7"]})


def test_veRL_loader_builds_its_sandbox_reward_on_our_url(rules_url: str, tokenizer_dir: Path) -> None:
    """load_reward_manager, no custom function, reward.sandbox_fusion.url: veRL's wiring, unchanged."""
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import load_reward_manager

    config = compose(
        [f"reward.sandbox_fusion.url={rules_url}", f"actor_rollout_ref.model.path={tokenizer_dir}"]
    )
    manager = load_reward_manager(config, AutoTokenizer.from_pretrained(tokenizer_dir))
    score = manager.compute_score  # partial(default_compute_score, sandbox_fusion_url=..., semaphore)
    good = score(data_source="codecontests", solution_str=fenced(SUM_PY), ground_truth=STDIO_CASES)
    wrong = score(data_source="codecontests", solution_str=fenced("print(3)"), ground_truth=STDIO_CASES)
    assert float(good) == 1.0
    assert abs(float(wrong) - 1 / 3) < 1e-9  # continuous: the first case passes, the others not
    adder = "def add(a, b):\n    return a + b"
    assert float(score(data_source="taco", solution_str=fenced(adder), ground_truth=CALL_CASES)) == 1.0


def test_sandbox_fusion_compute_score_python_and_cpp(rules_url: str) -> None:
    from verl.utils.reward_score import sandbox_fusion

    score, meta = sandbox_fusion.compute_score(rules_url, None, 512, fenced(SUM_PY), STDIO_CASES)
    assert score == 1.0 and [m["status"] for m in meta] == ["success"] * 3

    cpp = "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}"
    score, meta = sandbox_fusion.compute_score(rules_url, None, 512, fenced(cpp, "cpp"), STDIO_CASES)
    # veRL's compute_score always sends language=python: C++ goes through check_correctness
    assert score == 0.0
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    results, meta = check_correctness(rules_url, json.loads(STDIO_CASES), cpp, timeout=5, language="cpp")
    assert results == [True, True, True], meta


def test_verl_reads_each_failure_kind(rules_url: str) -> None:
    """check_correctness's codes: -2 runtime error, -3 timeout, -4 compile error, -1 a language the
    sandbox does not serve, False wrong answer."""
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    cases: dict[str, Any] = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    runs = {
        "raise ValueError('no')": -2,
        "while True: pass": -3,
        "print(4)": False,
    }
    for code, expected in runs.items():
        results, meta = check_correctness(rules_url, cases, code, timeout=2)
        assert results == [expected], (code, meta)
    results, meta = check_correctness(rules_url, cases, "int main() { return y; }", timeout=5, language="cpp")
    assert results == [-4] and meta[0]["status"] == "compile_error"
    results, meta = check_correctness(rules_url, cases, "class A {}", timeout=10, language="java")
    assert results == [-2], meta  # compiled, but no main method to run
    # An unknown language is a 422, as SandboxFusion answers it: veRL's client reports an API error.
    results, meta = check_correctness(rules_url, cases, "DISPLAY 'x'.", timeout=5, language="cobol")
    assert results == [-1] and meta[0]["status"] == "api_error"


def test_call_sandbox_api_shapes(rules_url: str) -> None:
    from verl.utils.reward_score.sandbox_fusion.utils import call_sandbox_api

    response, error = call_sandbox_api(rules_url, "print(input()[::-1])", "abc", 5, 5, 256)
    assert error is None and response is not None
    assert response["status"] == "Success"
    assert response["run_result"]["stdout"] == "cba\n" and response["run_result"]["return_code"] == 0
