"""veRL, TRL and OpenRLHF reward_func adapters against a real gateway on loopback.

Plain reference answers on embedded defaults, the same keys on every call (outage or not),
the outage policy, and the prompt veRL rows carry.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from typing import Any

import pytest

import arbiter.adapters.gateway
from arbiter.adapters.gateway import UNREACHABLE_KEY, GatewayConnection
from arbiter.adapters.keys import BASE_KEYS
from arbiter.adapters.settings import AdapterSettings
from arbiter.contract import Sample, Status
from tests.helpers import free_port
from tests.trainer.gateways import adapter_env, make_gateway

RIGHT = "<think>2+3=5</think> The answer is \\boxed{5}"
WRONG = "<think>2+3=6</think> The answer is \\boxed{6}"


async def verl(*args: Any, **kwargs: Any) -> dict[str, Any]:
    from arbiter.adapters.verl_reward import compute_score

    return await asyncio.to_thread(compute_score, *args, **kwargs)


async def openrlhf(prompt: str, response: str, label: Any) -> dict[str, Any]:
    from arbiter.adapters.openrlhf_reward_func import reward_func

    return await asyncio.to_thread(reward_func, [prompt + response], [prompt], [label])


async def test_plain_reference_answers_get_correctness_on_embedded_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bare "5" from TRL's answer column, veRL's gsm8k ground_truth, OpenRLHF's label."""
    from arbiter.adapters.trl_reward import arbiter_reward_async

    async with make_gateway() as gateway:
        with adapter_env(monkeypatch, gateway.grpc_target):
            trl = arbiter_reward_async(label_column="answer")
            assert await trl(prompts=["2+3?", "2+3?"], completions=[RIGHT, WRONG], answer=["5", "5"]) == [
                1.0,
                0.0,
            ]
            assert await trl(prompts=["2+3?"], completions=[RIGHT], answer=[5]) == [1.0]  # a number column
            right = await verl("openai/gsm8k", "2 + 3 = 5\n#### 5", "5", extra_info={"question": "2+3?"})
            wrong = await verl("openai/gsm8k", "2 + 3 = 6\n#### 6", "5", extra_info={"question": "2+3?"})
            assert (right["score"], right["acc"]) == (1.0, 1.0)
            assert (wrong["score"], wrong["acc"]) == (0.0, 0.0)
            assert (await openrlhf("6*7? ", "\\boxed{42}<|im_end|>", "42"))["rewards"] == [1.0]
            assert (await openrlhf("6*7? ", "\\boxed{41}<|im_end|>", "42"))["rewards"] == [0.0]
            # A JSON label with an answer is a reference too; no label still gets the format rules.
            assert (await openrlhf("6*7? ", "\\boxed{42}", {"answer": "42"}))["rewards"] == [1.0]
            assert (await openrlhf("hi ", "<think>x</think> hello<|im_end|>", ""))["rewards"] == [1.0]


MATH_RECIPE_CONFIG = {
    "routes": [{"datasource": "gsm8k|math.*", "recipe": "math"}, {"recipe": "format"}],
    "recipes": {
        "math": {
            "components": {"correct": {"grader": "math"}, "format": {"grader": "format", "value": "score"}},
            "formula": "0.9*correct + 0.1*format",
            "score": "correct",
        },
        "format": {"components": {"format": {"grader": "format"}}},
    },
}


async def test_grader_key_names_a_grader_recipe_key_a_recipe_and_routes_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's route: a recipe named `math` never shadows the grader."""
    async with make_gateway(MATH_RECIPE_CONFIG) as gateway:
        with adapter_env(monkeypatch, gateway.grpc_target):
            grader = await verl("", WRONG, {"grader": "math", "answer": "5"})
            recipe = await verl("", WRONG, {"recipe": "math", "answer": "5"})
            assert grader["score"] == 0.0  # the grader alone: a well-formatted wrong answer earns 0
            assert recipe["score"] == pytest.approx(0.1)  # the recipe: 0.9 x 0 + 0.1 x format
            # `gsm8k|math.*` is searched: veRL's real data-source names match it.
            for source in ("openai/gsm8k", "gsm8k", "DigitalLearningGmbH/MATH-lighteval", "math_dapo"):
                assert (await verl(source, WRONG, "5"))["score"] == pytest.approx(0.1), source
            assert (await verl("chat", WRONG, "5"))["score"] == 1.0  # the format route


async def test_every_adapter_answers_the_same_keys_outage_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outages: a gateway that stops mid-batch, and a worker that never reached it."""
    from arbiter.adapters.trl_reward import arbiter_reward

    port = free_port()
    with adapter_env(monkeypatch, f"127.0.0.1:{port}", ARBITER_GATEWAY_WAIT_S="0.3"):
        never = await verl("openai/gsm8k", RIGHT, "5")  # a fresh worker that never had an answer
        never_openrlhf = await openrlhf("q ", RIGHT, "5")
    async with make_gateway(grpc_port=port) as gateway:
        with adapter_env(monkeypatch, gateway.grpc_target, ARBITER_GATEWAY_WAIT_S="0.3"):
            first = [await verl("openai/gsm8k", RIGHT, "5"), await verl("x", "y", '{"grader": "nope"}')]
            first_openrlhf = await openrlhf("q ", RIGHT, "5")
            await gateway.stop()  # the outage starts in the middle of the batch
            rest = [await verl("openai/gsm8k", RIGHT, "5") for _ in range(3)]
            rest_openrlhf = await openrlhf("q ", RIGHT, "5")
            trl = await asyncio.to_thread(arbiter_reward("answer"), ["q"], [RIGHT], answer=["5"])
    assert first[0]["score"] == 1.0 and first[0]["status/ok"] == 1.0, {k: v for k, v in first[0].items() if v}
    assert first[0][UNREACHABLE_KEY] == 0.0
    assert first[1]["status/invalid_input"] == 1.0 and first[1]["status/ok"] == 0.0
    for flagged in [never, *rest]:
        assert flagged["score"] == 0.0 and flagged["status/ok"] == 0.0
        assert flagged[UNREACHABLE_KEY] == 1.0 and flagged["status/upstream_error"] == 1.0
    assert len({frozenset(d) for d in [never, *first, *rest]}) == 1, "veRL reads every sample's keys"
    assert set(never) == {"score", "acc", *BASE_KEYS}
    assert len({frozenset(d["extra_logs"]) for d in [never_openrlhf, first_openrlhf, rest_openrlhf]}) == 1
    assert first_openrlhf["rewards"] == [1.0] and rest_openrlhf["extra_logs"][UNREACHABLE_KEY] == [1.0]
    assert trl == [None]  # TRL: unscorable, left out, not a fake zero


async def test_outage_policy_waits_once_then_fails_fast_until_the_gateway_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A gateway that is down: a bounded, logged wait; then calls fail fast; then the gateway is back."""
    port = free_port()
    settings = AdapterSettings(target=f"127.0.0.1:{port}", wait_s=1.0, fallback_reward=-1.0)
    connection = GatewayConnection(settings)
    try:
        with caplog.at_level(logging.WARNING, logger="arbiter.adapters.gateway"):
            flagged = await asyncio.to_thread(connection.score, [Sample(response="x"), Sample(response="y")])
        assert [r.reward for r in flagged] == [-1.0, -1.0]
        assert all(r.status is Status.UPSTREAM_ERROR and r.logs[UNREACHABLE_KEY] == 1.0 for r in flagged)
        assert connection.down and "unreachable" in flagged[0].detail
        assert any("retry 1" in r.getMessage() for r in caplog.records), "the wait is logged"
        assert any("fail fast" in r.getMessage() for r in caplog.records)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="arbiter.adapters.gateway"):
            again = await asyncio.to_thread(connection.score, [Sample(response="z")])
        assert again[0].logs[UNREACHABLE_KEY] == 1.0
        assert not any("retry" in r.getMessage() for r in caplog.records), "down: no second wait"
        async with make_gateway(grpc_port=port):
            back = await asyncio.to_thread(_score_until_up, connection)
        assert back.status is Status.OK and back.logs[UNREACHABLE_KEY] == 0.0 and not connection.down
    finally:
        connection.close()


def _score_until_up(connection: GatewayConnection) -> Any:
    """Fail-fast calls while gRPC reconnects (it retries within 2 s), then the real answer."""
    for _ in range(100):
        result = connection.score([Sample(response="<think>a</think> b")])[0]
        if result.status is Status.OK:
            return result
        time.sleep(0.1)
    return result


def test_fail_fast_setting_and_its_validation() -> None:
    settings = AdapterSettings.from_env(
        {
            "ARBITER_GATEWAY": f"127.0.0.1:{free_port()}",
            "ARBITER_GATEWAY_WAIT_S": "0",
            "ARBITER_LOG_KEYS": "component/correct, math/boxed",
        }
    )
    assert settings.wait_s == 0 and settings.extra_log_keys == ("component/correct", "math/boxed")
    connection = GatewayConnection(settings)
    try:
        logs = connection.score([Sample(response="x")])[0].logs  # one attempt: fail fast
        assert logs[UNREACHABLE_KEY] == 1.0 and list(logs)[-2:] == ["component/correct", "math/boxed"]
    finally:
        connection.close()
    with pytest.raises(ValueError, match="ARBITER_GATEWAY_WAIT_S"):
        AdapterSettings.from_env({"ARBITER_GATEWAY_WAIT_S": "-1"})
    with pytest.raises(ValueError, match="not a number"):
        AdapterSettings.from_env({"ARBITER_GATEWAY_TIMEOUT_S": "soon"})
    with pytest.raises(ValueError, match="uses itself"):
        AdapterSettings.from_env({"ARBITER_LOG_KEYS": "acc"})


async def test_verl_sends_the_prompt_its_rows_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    """veRL passes no prompt; rows carry it in extra_info (question, prompt)."""
    from arbiter.adapters.verl_reward import prompt_of

    assert prompt_of({"question": "2+3?", "split": "train"}) == "2+3?"
    assert prompt_of({"prompt": [{"role": "user", "content": "hi"}]}) == "hi"
    assert prompt_of(None) == ""
    config: dict[str, object] = {
        "routes": [{"prompt_regex": "QUESTION", "recipe": "math"}, {"recipe": "format"}]
    }
    config["recipes"] = {
        "math": {"components": {"math": {"grader": "math"}}},
        "format": {"components": {"format": {"grader": "format"}}},
    }
    async with make_gateway(config) as gateway:
        with adapter_env(monkeypatch, gateway.grpc_target):
            routed = await verl("openai/gsm8k", WRONG, "5", extra_info={"question": "QUESTION: 2+3?"})
    assert routed["score"] == 0.0, "the prompt route saw the question: math graded the wrong answer"


def test_trainer_does_not_import_the_server() -> None:
    """The adapters need the contract and a gRPC stub: nothing of the services, nor FastAPI."""
    code = (
        "import sys\n"
        "import arbiter.adapters.verl_reward, arbiter.adapters.trl_reward\n"
        "import arbiter.adapters.openrlhf_reward_func, arbiter.adapters.openrlhf_agent\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('services', 'fastapi', 'trainer')]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert arbiter.adapters.gateway.connection.__doc__
