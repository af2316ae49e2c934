"""veRL 0.9.1's multi-turn tool path against Arbiter's episodes (a reward_rules process).

veRL's own code throughout: its tool registry (verl/tools/tool_registry.py) builds
arbiter.adapters.verl_tool's ArbiterTool from the recipe's YAML, and its AgentLoopWorker runs its
ToolAgentLoop (agent `tool_agent`) and arbiter.adapters.verl_agent_loop's subclass (agent
`arbiter_tool_agent`) with a real tokenizer (a tiny checkpoint saved to disk) and its hermes tool
parser. The one double is the policy: a server manager that answers canned turns.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from testkit.procs import free_port
from testkit.rules_service import reward_rules_service
from testkit.tiny_checkpoints import build_tokenizer
from tests.trainer.frameworks.test_verl import compose

pytestmark = pytest.mark.frameworks

verl = pytest.importorskip("verl", reason="runs in .venv-verl (scripts/test-frameworks.sh)")

REPO = Path(__file__).resolve().parents[3]
RECIPES = REPO / "trainer" / "recipes"
TOOL_CONFIG = RECIPES / "verl" / "verl_tool_config.yaml"
AGENT_LOOPS = RECIPES / "verl" / "agent_loops.yaml"
RECIPE = RECIPES / "verl_agent_math_python.sh"
QUESTION = "What is 6 * 7? Use the python tool."


@dataclass(frozen=True)
class Episodes:
    grpc_target: str
    http_url: str

    def open_count(self) -> float:
        return float(httpx.get(f"{self.http_url}/v1/episodes/stats", timeout=30).json()["open"])

    def wait_open(self, expected: float, within_s: float = 30.0) -> float:
        """The open count once it reaches `expected` (finishes may still be in flight)."""
        deadline = time.monotonic() + within_s
        while (count := self.open_count()) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        return count


@pytest.fixture(scope="module")
def episodes() -> Iterator[Episodes]:
    """reward_rules on loopback, holding episodes (its default) and serving gRPC for the tool."""
    grpc_port = free_port()
    settings = {
        "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc_port),
        "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
        "ARBITER_EPISODES__WARM_INTERPRETERS": "1",
        "ARBITER_EPISODES__PYTHON_TOOL__CELL_TIME_LIMIT_S": "2",
        "ARBITER_EPISODES__PYTHON_TOOL__MEMORY_LIMIT_MB": "256",
    }
    with reward_rules_service(settings) as url:
        yield Episodes(f"127.0.0.1:{grpc_port}", url)


@pytest.fixture
def reach(episodes: Episodes, monkeypatch: pytest.MonkeyPatch) -> Episodes:
    """The trainer-side environment: ARBITER_EPISODES names the service; fresh process clients."""
    from arbiter.adapters import episode_client

    monkeypatch.setenv("ARBITER_EPISODES", episodes.grpc_target)
    monkeypatch.setenv("ARBITER_GATEWAY_WAIT_S", "5")
    monkeypatch.setattr(episode_client, "_clients", {})
    return episodes


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer and a model config (no weights: nothing here runs the model)."""
    from transformers import LlamaConfig

    path = tmp_path_factory.mktemp("tiny-policy")
    tokenizer = build_tokenizer()
    tokenizer.save_pretrained(path)
    LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        architectures=["LlamaForCausalLM"],
    ).save_pretrained(path)
    return path


def load_tools(path: Path) -> list[Any]:
    from verl.tools.tool_registry import initialize_tools_from_config

    return list(initialize_tools_from_config(str(path)))


def tool_config(tmp_path: Path, **config: Any) -> Path:
    """The recipe's tool config with `config` merged into the tool's (e.g. another service)."""
    loaded = yaml.safe_load(TOOL_CONFIG.read_text())
    loaded["tools"][0]["config"].update(config)
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump(loaded))
    return path


# ---- the tool, through veRL's registry ----


def test_veRL_registry_builds_the_tool_from_the_recipe(reach: Episodes) -> None:
    from arbiter.adapters.verl_tool import ArbiterTool

    (tool,) = load_tools(TOOL_CONFIG)
    assert isinstance(tool, ArbiterTool)
    assert tool.name == "python" and tool.environment == "python_tool"
    schema = tool.get_openai_tool_schema().model_dump()
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert tool.client.target == reach.grpc_target  # ARBITER_EPISODES, as the recipe exports it


async def test_execute_keeps_state_across_calls_and_release_frees_the_episode(reach: Episodes) -> None:
    from arbiter.adapters.verl_tool import TOOL_KEYS

    (tool,) = load_tools(TOOL_CONFIG)
    before = reach.open_count()
    instance, _ = await tool.create(create_kwargs={"label": "42"})
    first, reward, metrics = await tool.execute(instance, {"code": "x = 6 * 7\nx"})
    assert "42" in (first.text or "") and reward == 0.0
    second, _, metrics = await tool.execute(instance, {"code": "print(x + 1)"})
    assert "<output>\n43\n</output>" in (second.text or "")  # the interpreter kept x
    assert tuple(metrics) == TOOL_KEYS and metrics["episode/tool_calls"] == 2.0
    assert metrics["status/ok"] == 1.0 and metrics["trainer/unreachable"] == 0.0
    assert reach.open_count() == before + 1
    assert await tool.calc_reward(instance) == 0.0  # no final answer was given
    await tool.release(instance)
    assert reach.open_count() == before


@pytest.mark.timeout(300)
async def test_hostile_calls_are_feedback_and_the_state_survives(reach: Episodes) -> None:
    (tool,) = load_tools(TOOL_CONFIG)
    instance, _ = await tool.create(create_kwargs={"label": "1"})
    try:
        await tool.execute(instance, {"code": "kept = 'still here'"})
        spin, _, metrics = await tool.execute(instance, {"code": "while True:\n    pass"})
        assert "TimeoutError" in (spin.text or "") and metrics["episode/tool_timeouts"] == 1.0
        flood, _, metrics = await tool.execute(instance, {"code": "print('a' * 10_000_000)"})
        text = flood.text or ""
        assert "truncated" in text and len(text) < 20_000
        after, _, metrics = await tool.execute(instance, {"code": "print(kept)"})
        assert "still here" in (after.text or "")  # replayed into the fresh interpreter
        empty, _, _ = await tool.execute(instance, {"code": "  "})  # never sent as a final answer
        assert "no `code`" in (empty.text or "")
        assert metrics["status/ok"] == 1.0
    finally:
        await tool.release(instance)


@pytest.mark.timeout(300)
async def test_code_feedback_as_a_tool_pays_on_the_hidden_tests(reach: Episodes) -> None:
    """`environment: code_feedback` per sample: a call submits a program, the visible tests'
    failures come back, passing them ends the episode with the hidden tests' reward."""
    (tool,) = load_tools(TOOL_CONFIG)
    label = {
        "visible": {"kind": "stdio", "cases": [{"input": "1 2\n", "output": "3"}]},
        "hidden": {"kind": "stdio", "cases": [{"input": "10 20\n", "output": "30"}]},
    }
    instance, _ = await tool.create(create_kwargs={"environment": "code_feedback", "label": label})
    wrong, reward, _ = await tool.execute(
        instance, {"code": "a, b = map(int, input().split())\nprint(a - b)"}
    )
    assert (wrong.text or "").startswith("<feedback>") and reward == 0.0
    _, reward, metrics = await tool.execute(
        instance, {"code": "a, b = map(int, input().split())\nprint(a + b)"}
    )
    assert reward == 1.0 and metrics["episode/done"] == 1.0 and metrics["episode/correct"] == 1.0
    over, _, _ = await tool.execute(instance, {"code": "print(0)"})
    assert "episode is over" in (over.text or "")
    assert await tool.calc_reward(instance) == 1.0
    await tool.release(instance)


class Trajectory:
    """What veRL's ToolAgentLoop hands `execute` as `agent_data`: the sample's tools_kwargs and
    messages (the episode is keyed on this object, weakly)."""

    def __init__(self, question: str, **create_kwargs: Any) -> None:
        self.tools_kwargs = {"python": {"create_kwargs": create_kwargs}}
        self.messages = [{"role": "user", "content": question}]


async def test_a_final_answer_holding_a_code_block_is_graded_not_run(reach: Episodes) -> None:
    (tool,) = load_tools(TOOL_CONFIG)
    trajectory = Trajectory(QUESTION, label="42")
    await tool.open(trajectory)
    instance, _ = await tool.create()
    ran, _, _ = await tool.execute(instance, {"code": "x = 6 * 7\nprint(x)"}, agent_data=trajectory)
    assert "<output>\n42\n</output>" in (ran.text or "")
    await tool.release(instance)
    answer = "Check it:\n```python\nprint(x)\n```\nSo the answer is \\boxed{42}."
    summary = await tool.conclude(trajectory, answer)
    assert summary is not None and summary.reward == 1.0 and summary.score == 1.0
    assert summary.logs["episode/tool_calls"] == 1.0, "the answer's block did not run"
    assert summary.logs["episode/turns"] == 2.0 and summary.logs["episode/done"] == 1.0


async def test_the_last_turn_is_kept_for_the_answer(reach: Episodes) -> None:
    """A tool call on the episode's last allowed turn is not sent (python_tool would grade it as
    the answer): the policy is told to answer, and its answer is graded on that turn."""
    from arbiter.adapters.episode_client import LAST_TURN

    (tool,) = load_tools(TOOL_CONFIG)
    trajectory = Trajectory("What is 2 + 2?", label="4", max_turns=2)
    first, _, _ = await tool.execute("a", {"code": "y = 2 + 2"}, agent_data=trajectory)
    assert tool.episode_of(trajectory).max_turns == 2
    assert "[no output]" in (first.text or "")
    refused, reward, metrics = await tool.execute("b", {"code": "print(y)"}, agent_data=trajectory)
    assert refused.text == LAST_TURN and reward == 0.0
    assert metrics["episode/turns"] == 1.0 and metrics["episode/done"] == 0.0
    summary = await tool.conclude(trajectory, "It is \\boxed{4}.")
    assert summary is not None and summary.reward == 1.0
    assert summary.logs["episode/turns"] == 2.0 and summary.logs["episode/tool_calls"] == 1.0


async def test_an_unreachable_service_is_a_flagged_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.adapters import episode_client

    monkeypatch.setenv("ARBITER_GATEWAY_WAIT_S", "0")
    monkeypatch.setenv("ARBITER_FALLBACK_REWARD", "-1")
    monkeypatch.setattr(episode_client, "_clients", {})
    (tool,) = load_tools(tool_config(tmp_path, episodes=f"127.0.0.1:{free_port()}"))
    instance, _ = await tool.create(create_kwargs={"label": "42"})
    response, reward, metrics = await tool.execute(instance, {"code": "print(1)"})
    assert "unreachable" in (response.text or "")
    assert reward == -1.0, "the fallback, flagged: never a silent zero"
    assert metrics["trainer/unreachable"] == 1.0 and metrics["status/upstream_error"] == 1.0
    assert metrics["status/ok"] == 0.0
    assert await tool.calc_reward(instance) == -1.0
    await tool.release(instance)  # no exception into veRL's loop


# ---- veRL's agent loop worker: ToolAgentLoop and arbiter_tool_agent ----


class ScriptedServer:
    """The policy's stand-in (veRL's server manager): for each question, canned turns in order;
    the turn is how many assistant turns the prompt it is handed already holds."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.prompts: list[str] = []

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: Any, **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        context = self.tokenizer.decode(prompt_ids)
        self.prompts.append(context)
        question = next(q for q in self.scripts if q in context)
        turn = context.count("<|im_start|>assistant") - 1
        text = self.scripts[question][turn] + "<|im_end|>"
        return TokenOutput(token_ids=self.tokenizer(text, add_special_tokens=False)["input_ids"])


def call(code: str) -> str:
    return f"<tool_call>{json.dumps({'name': 'python', 'arguments': {'code': code}})}</tool_call>"


def worker(model_dir: Path, tools: Path, server: ScriptedServer) -> Any:
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    config = compose(
        [
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=512",
            "actor_rollout_ref.rollout.response_length=2048",
            "actor_rollout_ref.rollout.multi_turn.enable=true",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=2048",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={AGENT_LOOPS}",
        ]
    )
    return AgentLoopWorker(config, server)


def rows(agent: str, samples: list[tuple[str, str]]) -> Any:
    """A batch as veRL's RLHFDataset hands it over: raw chat prompts, tools_kwargs, agent_name."""
    from verl import DataProto

    prompts: Any = np.empty(len(samples), dtype=object)
    prompts[:] = [[{"role": "user", "content": question}] for question, _ in samples]
    return DataProto.from_dict(
        non_tensors={
            "raw_prompt": prompts,
            "tools_kwargs": np.array(
                [{"python": {"create_kwargs": {"label": label}}} for _, label in samples], dtype=object
            ),
            "agent_name": np.array([agent] * len(samples), dtype=object),
        }
    )


def responses(tokenizer: Any, output: Any) -> list[str]:
    return [tokenizer.decode(r, skip_special_tokens=False) for r in output.batch["responses"]]


@pytest.mark.timeout(300)
async def test_arbiter_tool_agent_runs_episodes_and_scores_the_trajectory(
    reach: Episodes, model_dir: Path
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    wrong = "What is 6 * 7 again? Use the python tool."
    server = ScriptedServer(
        tokenizer,
        {
            # The final answer holds a code block: graded as it is, not run (tool_calls below).
            QUESTION: [
                call("x = 6 * 7"),
                call("print(x)"),
                "```python\nprint(x)\n```\ngives 42: \\boxed{42}.",
            ],
            wrong: [call("y = 6 * 7 - 1\nprint(y)"), "So \\boxed{41}."],
        },
    )
    before = reach.open_count()
    output = await worker(model_dir, TOOL_CONFIG, server).generate_sequences(
        rows("arbiter_tool_agent", [(QUESTION, "42"), (wrong, "42")])
    )
    right_text, wrong_text = responses(tokenizer, output)
    assert "<|im_start|>tool\n<output>\n42\n</output>" in right_text  # x survived the first call
    assert "<output>\n41\n</output>" in wrong_text
    # The episode's reward is the trajectory's: veRL's rm_scores, on the last response token.
    assert output.batch["rm_scores"].sum(dim=-1).tolist() == [1.0, 0.0]
    assert list(output.non_tensor_batch["acc"]) == [1.0, 0.0]
    assert list(output.non_tensor_batch["episode/tool_calls"]) == [2.0, 1.0]
    assert list(output.non_tensor_batch["trainer/unreachable"]) == [0.0, 0.0]
    # The tool's output is context, not policy tokens: masked out of the loss.
    mask = output.batch["response_mask"][0]
    generated = sum(
        len(tokenizer(t + "<|im_end|>", add_special_tokens=False)["input_ids"])
        for t in server.scripts[QUESTION]
    )
    assert int(mask.sum()) == generated
    assert reach.wait_open(before) == before  # every episode finished, its interpreter freed


@pytest.mark.timeout(300)
async def test_veRLs_plain_tool_agent_keeps_state_and_frees_the_episode_when_done(
    reach: Episodes, model_dir: Path
) -> None:
    """veRL's own `tool_agent` (create/execute/release around every call) still gets one
    interpreter per trajectory, finished once veRL drops the trajectory."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    server = ScriptedServer(
        tokenizer, {QUESTION: [call("import math\nz = math.prod([6, 7])"), call("print(z)"), "\\boxed{42}"]}
    )
    before = reach.open_count()
    output = await worker(model_dir, TOOL_CONFIG, server).generate_sequences(
        rows("tool_agent", [(QUESTION, "42")])
    )
    (text,) = responses(tokenizer, output)
    assert "<output>\n42\n</output>" in text
    assert "rm_scores" not in output.batch.keys()  # noqa: SIM118  veRL's reward function scores it
    del output
    gc.collect()
    assert await asyncio.to_thread(reach.wait_open, before) == before


@pytest.mark.timeout(300)
async def test_an_outage_during_a_rollout_is_a_flagged_fallback_trajectory(
    tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer

    from arbiter.adapters import episode_client

    monkeypatch.setenv("ARBITER_GATEWAY_WAIT_S", "0")
    monkeypatch.setenv("ARBITER_FALLBACK_REWARD", "-1")
    monkeypatch.setattr(episode_client, "_clients", {})
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    server = ScriptedServer(tokenizer, {QUESTION: [call("print(6 * 7)"), "\\boxed{42}"]})
    tools = tool_config(tmp_path, episodes=f"127.0.0.1:{free_port()}")
    output = await worker(model_dir, tools, server).generate_sequences(
        rows("arbiter_tool_agent", [(QUESTION, "42")])
    )
    (text,) = responses(tokenizer, output)
    assert "unreachable" in text  # the policy is told; nothing ran
    assert output.batch["rm_scores"].sum().item() == -1.0
    assert list(output.non_tensor_batch["trainer/unreachable"]) == [1.0]
    assert list(output.non_tensor_batch["status/ok"]) == [0.0]


# ---- the recipe ----


def test_the_recipe_composes_in_veRLs_config_and_builds_the_tool(tmp_path: Path, reach: Episodes) -> None:
    """The script's overrides, as bash expands them (a stand-in python3 records them), composed by
    veRL's own Hydra config; the files it names load through veRL's loaders."""
    from arbiter.adapters.verl_tool import ArbiterTool

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text('#!/bin/sh\nprintf \'%s\\0\' "$@" > "$ARGV_OUT"\n')
    fake.chmod(0o755)
    out = tmp_path / "argv"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGV_OUT": str(out)}
    subprocess.run(["bash", str(RECIPE)], env=env, check=True, capture_output=True)
    argv = out.read_text().split("\0")[:-1]
    assert argv[:2] == ["-m", "verl.trainer.main_ppo"]
    config = compose(argv[2:])
    rollout = config.actor_rollout_ref.rollout
    assert rollout.multi_turn.enable and rollout.multi_turn.format == "hermes"
    assert rollout.agent.default_agent_loop == "arbiter_tool_agent"
    assert Path(rollout.multi_turn.tool_config_path) == TOOL_CONFIG
    (tool,) = load_tools(Path(rollout.multi_turn.tool_config_path))
    assert isinstance(tool, ArbiterTool)
    (loop,) = yaml.safe_load(Path(rollout.agent.agent_loop_config_path).read_text())
    assert loop["name"] == "arbiter_tool_agent"
    assert loop["_target_"] == "arbiter.adapters.verl_agent_loop.ArbiterToolAgentLoop"
