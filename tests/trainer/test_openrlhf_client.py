"""OpenRLHF's real reward-fetching code against a running gateway: HTTP, and the reward_func file."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from arbiter.adapters.keys import UNREACHABLE_KEY
from services import catalog
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.trainer.gateways import adapter_env
from tests.trainer.openrlhf_peer import CharTokenizer, SamplingParams, ScriptedEngine, load_agent_module

REWARD_FUNC_FILE = Path(__file__).resolve().parents[2] / "trainer" / "openrlhf_reward_func.py"
EOS = "<|im_end|>"
CASES = {
    # prompt: (response, finish_reason, label, expected reward)
    "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n": (
        "<think>6*7=42. Wait, let me double-check: yes.</think> \\boxed{42}" + EOS,
        "stop",
        "42",
        1.0,
    ),
    "<|im_start|>user\nWhat is 1/2+1/4?<|im_end|>\n<|im_start|>assistant\n": (
        "<think>three quarters</think> The answer is 0.75" + EOS,
        "stop",
        "\\frac{3}{4}",
        1.0,
    ),
    "<|im_start|>user\nWhat is 2^10?<|im_end|>\n<|im_start|>assistant\n": (
        "<think>1000</think> \\boxed{1000}" + EOS,
        "stop",
        "1024",
        0.0,
    ),
    "<|im_start|>user\nFormat only<|im_end|>\n<|im_start|>assistant\n": (
        "<think>fine</think> done" + EOS,
        "stop",
        '{"grader": "format"}',
        1.0,
    ),
    "<|im_start|>user\nCut off<|im_end|>\n<|im_start|>assistant\n": (
        "<think>and so on and so on",
        "length",
        "7",
        0.0,
    ),
}


@pytest.fixture
async def gateway() -> AsyncIterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": 0,
                "recipes": {"default": {"components": {"math": {"grader": "math"}}}},
            }
        }
    )
    async with catalog.make_server("gateway", settings) as server:
        yield server


async def run_openrlhf(remote: str) -> dict[str, dict[str, object]]:
    agent = load_agent_module()
    executor = agent.SingleTurnAgentExecutor(remote)
    engine = ScriptedEngine({p: (r, f) for p, (r, f, _, _) in CASES.items()})
    outputs = {}
    for prompt, (_, _, label, _) in CASES.items():
        outputs[prompt] = await executor.execute(
            prompt, label, SamplingParams(), max_length=4096, hf_tokenizer=CharTokenizer(), llm_engine=engine
        )
    return outputs


def check(outputs: dict[str, dict[str, object]]) -> None:
    keysets = set()
    for prompt, output in outputs.items():
        expected = CASES[prompt][3]
        assert output["reward"] == [expected], (prompt, output)
        assert output["scores"] == [expected]
        extra = output["extra_logs"]
        assert isinstance(extra, dict)
        for key, value in extra.items():
            assert key not in {"reward", "score", "kl"}
            assert isinstance(value, list) and len(value) == 1 and math.isfinite(value[0]), key
        keysets.add(frozenset(extra))
    assert len(keysets) == 1, "OpenRLHF merges extra_logs across samples: the keys must match"
    first = outputs[next(iter(CASES))]["extra_logs"]
    assert isinstance(first, dict)
    assert first["reflect/wait"] == [1.0] and first["response/stopped"] == [1.0]
    assert first["component/math"] == [1.0] and first["math/boxed"] == [1.0]
    cut = outputs[list(CASES)[-1]]["extra_logs"]
    assert isinstance(cut, dict) and cut["response/stopped"] == [0.0]


async def test_openrlhf_http_fetch_against_the_gateway(gateway: GraderServer) -> None:
    check(await run_openrlhf(f"{gateway.http_url}/get_reward"))


async def test_openrlhf_reward_func_file_against_the_gateway(
    gateway: GraderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file answers the adapters' fixed keys; ARBITER_LOG_KEYS passes on gateway logs beside them.
    with adapter_env(monkeypatch, gateway.grpc_target, ARBITER_LOG_KEYS="component/math,math/boxed"):
        check(await run_openrlhf(str(REWARD_FUNC_FILE)))


async def test_openrlhf_reward_func_outage_mid_batch_keeps_the_keys(
    gateway: GraderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway stops half-way through OpenRLHF's samples: flagged fallbacks, the same keys."""
    agent = load_agent_module()
    executor = agent.SingleTurnAgentExecutor(str(REWARD_FUNC_FILE))
    engine = ScriptedEngine({p: (r, f) for p, (r, f, _, _) in CASES.items()})
    outputs = []
    with adapter_env(monkeypatch, gateway.grpc_target, ARBITER_GATEWAY_WAIT_S="0.5"):
        for index, (prompt, (_, _, label, _)) in enumerate(CASES.items()):
            if index == 2:
                await gateway.stop()
            outputs.append(
                await executor.execute(
                    prompt,
                    label,
                    SamplingParams(),
                    max_length=4096,
                    hf_tokenizer=CharTokenizer(),
                    llm_engine=engine,
                )
            )
    assert [o["reward"] for o in outputs[:2]] == [[1.0], [1.0]]
    assert all(o["reward"] == [0.0] and o["extra_logs"][UNREACHABLE_KEY] == [1.0] for o in outputs[2:])
    assert all(o["extra_logs"]["status/ok"] == [0.0] for o in outputs[2:])
    assert len({frozenset(o["extra_logs"]) for o in outputs}) == 1, "OpenRLHF merges extra_logs by key"
