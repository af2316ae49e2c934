"""trainer/openrlhf_agent.py driven by OpenRLHF 0.11.2's own MultiTurnAgentExecutor.execute against
a live Arbiter: a real tokenizer (a tiny checkpoint saved and loaded from disk) and a scripted
llm_engine (canned actions: the one part that cannot run here)."""

from __future__ import annotations

import asyncio
import importlib.util
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Status
from testkit.tiny_checkpoints import build_tokenizer
from tests.episodes.helpers import extension, served
from tests.helpers import free_port
from tests.trainer.openrlhf_peer import SamplingParams, load_agent_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("tok")
    build_tokenizer().save_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def load_agent_file(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> types.ModuleType:
    """The agent file loaded as OpenRLHF's vllm_engine._load_agent_executor loads it."""
    base = load_agent_module()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    spec = importlib.util.spec_from_file_location("agent_module", ROOT / "trainer" / "openrlhf_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, base.AgentExecutorBase)
    # The adapter behind the file is imported once per process, as in a rollout actor: a fresh
    # actor's (absent) client, so this test's environment is the one it reads.
    monkeypatch.setattr(importlib.import_module("arbiter.adapters.episode_client"), "_clients", {})
    return module


def agent_keys() -> list[str]:
    """The adapter's fixed key set, read once the agent file has loaded it (after OpenRLHF's own)."""
    from arbiter.adapters.openrlhf_agent import AGENT_KEYS

    return list(AGENT_KEYS)


@dataclass
class _Completion:
    token_ids: list[int]
    text: str
    finish_reason: str
    logprobs: Any = None


@dataclass
class _Output:
    outputs: list[_Completion]


class ScriptedEngine:
    """'Generates' the next canned action of the episode whose question is in the context."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = {question: iter(actions) for question, actions in scripts.items()}
        self.contexts: list[str] = []

    async def generate(
        self, prompt_token_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> _Output:
        context = self.tokenizer.decode(prompt_token_ids, skip_special_tokens=False)
        self.contexts.append(context)
        (question,) = [q for q in self.scripts if q in context]
        text = next(self.scripts[question])
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: params.max_tokens]
        finish = "length" if len(ids) == params.max_tokens else "stop"
        return _Output([_Completion(list(ids), self.tokenizer.decode(ids), finish)])


async def run_episodes(
    module: types.ModuleType,
    engine: ScriptedEngine,
    tokenizer: Any,
    cases: list[tuple[str, str]],
    max_length: int = 2048,
) -> list[dict[str, Any]]:
    executor = module.AgentExecutor()
    return list(
        await asyncio.gather(
            *(
                executor.execute(
                    prompt, label, SamplingParams(max_tokens=None), max_length, tokenizer, engine
                )
                for prompt, label in cases
            )
        )
    )


async def test_openrlhf_runs_python_tool_episodes_against_arbiter(
    monkeypatch: pytest.MonkeyPatch, tokenizer: Any
) -> None:
    async with served() as (server, _):
        module = load_agent_file(monkeypatch, {"ARBITER_EPISODES": server.grpc_target})
        engine = ScriptedEngine(
            tokenizer,
            {
                "What is six times seven?": [
                    "Compute it.\n```python\nx = 6 * 7\nprint(x)\n```",
                    "So \\boxed{42}",
                ],
                "What is two plus two?": [
                    "```python\ny = 2 + 2\n```",
                    "```python\ny * 10\n```",
                    "It is \\boxed{5}",
                ],
                "Name a prime.": ["\\boxed{7}"],
            },
        )
        cases = [("What is six times seven?", "42"), ("What is two plus two?", "4"), ("Name a prime.", "7")]
        right, wrong, direct = await run_episodes(module, engine, tokenizer, cases)

        assert right["reward"] == pytest.approx(1.0) and right["scores"] == 1.0
        assert len(right["action_ranges"]) == 2
        context = tokenizer.decode(right["observation_tokens"])
        assert "<output>\n42\n</output>" in context  # the tool's output went into the policy's context
        assert right["extra_logs"]["episode/tool_calls"] == 1 and right["extra_logs"]["episode/correct"] == 1
        assert wrong["reward"] == 0.0 and len(wrong["action_ranges"]) == 3
        assert "<output>\n40\n</output>" in tokenizer.decode(wrong["observation_tokens"])
        assert direct["reward"] == 1.0 and len(direct["action_ranges"]) == 1
        for output in (right, wrong, direct):
            assert list(output["extra_logs"]) == agent_keys()  # the fixed key set
            assert output["extra_logs"]["status/ok"] == 1 and output["extra_logs"]["trainer/unreachable"] == 0
        assert extension(server).manager.open == {}  # every episode finished, its interpreter freed
        assert extension(server).interpreters().live == 0


async def test_an_episode_stopped_by_the_token_budget_is_finished(
    monkeypatch: pytest.MonkeyPatch, tokenizer: Any
) -> None:
    async with served() as (server, _):
        module = load_agent_file(monkeypatch, {"ARBITER_EPISODES": server.grpc_target})
        loop_action = "```python\nprint('x' * 40)\n```"
        engine = ScriptedEngine(tokenizer, {"Keep going.": [loop_action] * 50})
        (output,) = await run_episodes(module, engine, tokenizer, [("Keep going.", "1")], max_length=200)
        assert output["reward"] == 0.0
        assert output["extra_logs"]["episode/done"] == 0 and output["extra_logs"]["episode/tool_calls"] >= 1
        assert extension(server).manager.open == {}


async def test_an_unreachable_service_gives_flagged_fallbacks(
    monkeypatch: pytest.MonkeyPatch, tokenizer: Any
) -> None:
    env = {
        "ARBITER_EPISODES": f"127.0.0.1:{free_port()}",
        "ARBITER_GATEWAY_WAIT_S": "0.5",
        "ARBITER_FALLBACK_REWARD": "-1",
    }
    module = load_agent_file(monkeypatch, env)
    engine = ScriptedEngine(tokenizer, {"Anyone there?": ["\\boxed{1}"]})
    (output,) = await run_episodes(module, engine, tokenizer, [("Anyone there?", "1")])
    assert output["reward"] == -1.0 and output["scores"] == 0.0
    logs = output["extra_logs"]
    assert list(logs) == agent_keys()
    assert logs["trainer/unreachable"] == 1 and logs["status/upstream_error"] == 1


async def test_a_lost_episode_ends_flagged(monkeypatch: pytest.MonkeyPatch, tokenizer: Any) -> None:
    async with served() as (server, _):
        module = load_agent_file(monkeypatch, {"ARBITER_EPISODES": server.grpc_target})
        manager = extension(server).manager

        class Forgetful(ScriptedEngine):
            async def generate(
                self, prompt_token_ids: list[int], params: Any, multi_modal_data: Any = None
            ) -> _Output:
                for episode_id in list(manager.open):  # the replica lost its episodes (a restart)
                    del manager.open[episode_id]
                return await super().generate(prompt_token_ids, params, multi_modal_data)

        engine = Forgetful(tokenizer, {"Lost?": ["```python\n1\n```"]})
        (output,) = await run_episodes(module, engine, tokenizer, [("Lost?", "1")])
        logs = output["extra_logs"]
        assert logs["episode/lost"] == 1 and logs[f"status/{Status.GRADER_ERROR.value.lower()}"] == 1
        assert output["reward"] == 0.0 and list(logs) == agent_keys()
