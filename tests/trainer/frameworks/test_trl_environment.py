"""TRL 1.16's GRPOTrainer with Arbiter episodes as its environment (arbiter.adapters.trl_environment).

A gateway process holds the episodes (`episodes.service: gateway`: its embedded math grading
judges final answers) and runs each rollout's tool calls in that rollout's own sandboxed
interpreter. The trainer test is TRL's own loop end to end: `environment_factory` instances reset
per rollout, TRL's chat template and response parser, its tool-calling loop calling the
environment's `python` tool, its reward call with the environments. The one double is the
policy's first turn, which a random tiny model cannot write: TRL's `rollout_func` hook answers it
with canned tool calls; the answer after the tool output is the tiny model's own token ("5" or
"6", every other token suppressed), so each rollout's right reward is known. After two steps
the service is killed: the third step's tool calls fail visibly, its rewards are None, and it
trains all the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.tiny_checkpoints import build_policy, build_tokenizer
from tests.helpers import ServiceProcess, free_port
from tests.trainer.frameworks.running import RunningGateway, gateway_process

pytestmark = pytest.mark.frameworks

trl = pytest.importorskip("trl", reason="runs in .venv-trl (scripts/test-frameworks.sh)")

# The trainer side's variables: the gateway would read ARBITER_EPISODES & co. as its own sections.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


def episodes_gateway(http: int, grpc: int) -> ServiceProcess:
    return gateway_process(
        http,
        grpc,
        ARBITER_EPISODES__SERVICE="gateway",
        ARBITER_EPISODES__WARM_INTERPRETERS="1",
        ARBITER_EPISODES__PYTHON_TOOL__CELL_TIME_LIMIT_S="5",
        ARBITER_EPISODES__PYTHON_TOOL__MEMORY_LIMIT_MB="256",
    )


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningGateway]:
    """A gateway holding episodes, and the trainer side pointed at it with a fresh client."""
    from arbiter.adapters import episode_client

    http, grpc = free_port(), free_port()
    with episodes_gateway(http, grpc) as process:
        monkeypatch.setenv("ARBITER_EPISODES", f"127.0.0.1:{grpc}")
        monkeypatch.setenv("ARBITER_GATEWAY_WAIT_S", "1")
        monkeypatch.setattr(episode_client, "_clients", {})
        yield RunningGateway(process, f"127.0.0.1:{grpc}", f"http://127.0.0.1:{http}")


def stats(gateway: RunningGateway) -> dict[str, float]:
    """The service's episode counts: open, remembered (finished or expired), expired."""
    answer = httpx.get(f"{gateway.http_url}/v1/episodes/stats", timeout=30)
    assert answer.status_code == 200, answer.text
    return {key: float(answer.json()[key]) for key in ("open", "remembered", "expired")}


class Metrics:
    """TRL's `log_metric`: what the reward function logged, by name."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def __call__(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)


def answered(content: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": content}]


def test_the_environment_runs_tool_calls_in_one_interpreter_and_grades_the_answer(
    gateway: RunningGateway,
) -> None:
    from arbiter.adapters.episode_client import LAST_TURN
    from arbiter.adapters.trl_environment import AGENT_KEYS, arbiter_environment, arbiter_episode_reward

    factory = arbiter_environment(label_column="answer")
    right, wrong = factory(), factory()
    for env in (right, wrong):
        env.reset(prompt=[{"role": "user", "content": "What is 6*7?"}], answer="42")
    assert right.python("x = 6 * 7") == "<output>\n[no output]\n</output>\n"
    assert right.python("print(x)") == "<output>\n42\n</output>\n", "the interpreter persists"
    assert "ZeroDivisionError" in wrong.python("1 / 0"), "an exception is feedback, not a failure"
    assert wrong.python("   ") == "[no code: nothing ran]", "an empty call never reads as the answer"
    assert right.python("s = '```'\nprint(len(s))") == "<output>\n3\n</output>\n", "a fence inside runs"

    reward = arbiter_episode_reward()
    metrics = Metrics()
    rewards = reward(
        prompts=[None, None],
        completions=[answered("The answer is 42."), answered("It is 41.")],
        environments=[right, wrong],
        answer=["42", "42"],
        log_metric=metrics,
    )
    assert rewards == [1.0, 0.0]
    assert right.episode is not None and wrong.episode is not None
    assert right.episode.logs["episode/tool_calls"] == 3 and right.episode.logs["episode/correct"] == 1
    assert wrong.episode.logs["episode/tool_errors"] == 1 and wrong.episode.logs["episode/done"] == 1
    assert list(right.episode.logs) == list(AGENT_KEYS)
    assert metrics.values["arbiter/unscored"] == [0.0] and metrics.values["episode/correct"] == [0.5]
    assert stats(gateway) == {"open": 0.0, "remembered": 2.0, "expired": 0.0}, "both finished"

    # TRL pools instances and resets them per batch: a rollout never scored is finished then.
    right.reset(prompt="What is 1+1?", answer="2")
    right.python("y = 1")
    first = right.episode
    right.reset(prompt="What is 2+2?", answer="4")
    assert right.episode is not first
    assert reward(prompts=[None], completions=["4"], environments=[right]) == [1.0]
    assert stats(gateway)["open"] == 0.0

    # The episode's last allowed turn is kept for the answer: a tool call there does not run.
    short = arbiter_environment(label_column="answer", max_turns=2)()
    short.reset(prompt="What is 2+2?", answer="4")
    short.python("y = 4")
    assert short.python("print(y)") == LAST_TURN
    assert short.python("print(y)") == LAST_TURN, "it costs no turn: the answer still has it"
    assert reward(prompts=[None], completions=["4"], environments=[short]) == [1.0]
    assert short.episode is not None and short.episode.logs["episode/turns"] == 2
    assert short.episode.logs["episode/tool_calls"] == 1
    assert short.python("print(y)").startswith("[the episode is over"), "no step past the end"

    # A final answer holding a code block is graded as it is, not run as a tool call.
    fenced = factory()
    fenced.reset(prompt="What is 6*7?", answer="42")
    fenced.python("x = 6 * 7")
    answer = "Check:\n```python\nprint(x)\n```\nSo the answer is \\boxed{42}."
    assert reward(prompts=[None], completions=[answered(answer)], environments=[fenced]) == [1.0]
    assert fenced.episode is not None and fenced.episode.logs["episode/tool_calls"] == 1
    assert fenced.episode.logs["episode/done"] == 1 and fenced.episode.logs["episode/turns"] == 2


def test_an_unreachable_or_restarted_service_is_flagged_never_a_zero(
    gateway: RunningGateway,
) -> None:
    from arbiter.adapters.trl_environment import (
        EpisodeUnavailable,
        arbiter_environment,
        arbiter_episode_reward,
    )

    factory = arbiter_environment(label_column="answer")
    reward = arbiter_episode_reward()
    env = factory()
    env.reset(prompt="What is 2+3?", answer="5")
    env.python("x = 5")

    # A restarted service on the same ports: the episode is not held there any more.
    gateway.process.stop()
    http, grpc = gateway.http_url.rsplit(":", 1)[1], gateway.grpc_target.rsplit(":", 1)[1]
    restarted = episodes_gateway(int(http), int(grpc)).start()
    try:
        with pytest.raises(EpisodeUnavailable):
            env.python("print(x)")
        metrics = Metrics()
        assert reward(prompts=[None], completions=["5"], environments=[env], log_metric=metrics) == [None]
        assert env.episode is not None and env.episode.logs["episode/lost"] == 1
        assert metrics.values["arbiter/unscored"] == [1.0] and metrics.values["episode/lost"] == [1.0]
    finally:
        restarted.stop()

    # Nothing answers: the start fails after the wait, tool calls raise, the reward is None.
    env.reset(prompt="What is 2+3?", answer="5")
    with pytest.raises(EpisodeUnavailable):
        env.python("x = 5")
    metrics = Metrics()
    assert reward(prompts=[None], completions=["5"], environments=[env], log_metric=metrics) == [None]
    assert env.episode is not None
    assert env.episode.logs["trainer/unreachable"] == 1 and env.episode.logs["status/upstream_error"] == 1
    assert metrics.values["arbiter/unscored"] == [1.0]


def tiny_tool_model(root: Path) -> tuple[Path, Any]:
    """A random 1-layer Llama with a tokenizer that renders and parses tool calls (Qwen3's chat
    template, whose response parser TRL knows), built and saved locally."""
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = build_tokenizer(extra_special=TOOL_TOKENS)
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.eos_token = "<|im_end|>"
    return build_policy(root / "tiny-tool-policy", tokenizer, max_positions=4096), tokenizer


def scripted_first_turn(a: int, b: int) -> str:
    """Two tool calls in one turn: the second reads the first's variable (one interpreter)."""
    call = '<tool_call>\n{{"name": "python", "arguments": {{"code": "{code}"}}}}\n</tool_call>'
    return "\n".join([call.format(code=f"x = {a} + {b}"), call.format(code="print(x)")]) + "<|im_end|>"


def test_grpo_trainer_rolls_out_in_arbiter_episodes_and_survives_an_outage(
    gateway: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from arbiter.adapters.trl_environment import arbiter_environment, arbiter_episode_reward

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory, rollout_func: experimental
    model_path, tokenizer = tiny_tool_model(tmp_path)
    allowed = {tokenizer.convert_tokens_to_ids("5"), tokenizer.convert_tokens_to_ids("6")}
    rows = [
        {"prompt": [{"role": "user", "content": f"What is {a}+{b}?"}], "answer": str(a + b)}
        for a, b in [(2, 3), (3, 3)] * 4
    ]
    question = re.compile(r"What is (\d+)\+(\d+)\?")

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's rollout hook: the policy's first turn, canned (the chat template renders the tools)."""
        prompt_ids, completion_ids = [], []
        for prompt in prompts:
            ids = trainer.processing_class.apply_chat_template(
                prompt,
                tools=trainer.tools,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
                chat_template=trainer.chat_template,
            )
            a, b = question.search(prompt[-1]["content"]).groups()  # type: ignore[union-attr]
            prompt_ids.append(list(ids))
            completion_ids.append(
                trainer.processing_class(scripted_first_turn(int(a), int(b)), add_special_tokens=False)[
                    "input_ids"
                ]
            )
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    calls: list[dict[str, Any]] = []
    inner = arbiter_episode_reward()

    def reward(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        rewards = inner(prompts=prompts, completions=completions, **columns)
        episodes = [env.episode for env in columns["environments"]]
        calls.append(
            {
                "completions": completions,
                "answers": list(columns["answer"]),
                "rewards": rewards,
                "ids": [e.id for e in episodes],
                "logs": [dict(e.logs) for e in episodes],
            }
        )
        return rewards

    reward.__name__ = inner.__name__
    counts: list[dict[str, float]] = []

    class KillServiceAfterStep(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 2:
                counts.append(stats(gateway))
                gateway.process.proc.kill()  # type: ignore[union-attr]
                gateway.process.proc.wait()  # type: ignore[union-attr]

    config = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        max_steps=3,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=512,
        max_tool_calling_iterations=1,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
        # The answer after the tool output: one token, "5" or "6".
        generation_kwargs={
            "max_new_tokens": 1,
            "suppress_tokens": [i for i in range(len(tokenizer)) if i not in allowed],
        },
    )
    trainer = GRPOTrainer(
        model=str(model_path),
        reward_funcs=[reward],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=arbiter_environment(label_column="answer"),
        rollout_func=rollout,
        callbacks=[KillServiceAfterStep()],
    )
    trainer.train()

    assert len(calls) == 3, "one reward call per step"
    served, down = calls[:2], calls[2]
    rollouts = 0
    for call in served:
        for completion, answer, got, logs in zip(
            call["completions"], call["answers"], call["rewards"], call["logs"], strict=True
        ):
            rollouts += 1
            roles = [m["role"] for m in completion]
            assert roles == ["assistant", "tool", "tool", "assistant"], completion
            assert [m["content"] for m in completion[1:3]] == [
                "<output>\n[no output]\n</output>\n",
                f"<output>\n{answer}\n</output>\n",
            ], "the second call read the first's variable: one interpreter per rollout"
            final = completion[-1]["content"].strip()
            assert final in {"5", "6"}
            assert got == (1.0 if final == answer else 0.0), (final, answer, got)
            assert logs["episode/tool_calls"] == 2 and logs["episode/turns"] == 3
            assert logs["episode/done"] == 1 and logs["trainer/unreachable"] == 0
    assert len({i for call in served for i in call["ids"]}) == rollouts == 8, "an episode per rollout"
    assert counts == [{"open": 0.0, "remembered": 8.0, "expired": 0.0}], "all finished"
    rewards = [r for call in served for r in call["rewards"]]
    assert 1.0 in rewards and 0.0 in rewards

    # The service died after step 2: the tools fail visibly, the rewards are None, training goes on.
    for completion, logs in zip(down["completions"], down["logs"], strict=True):
        assert [m["role"] for m in completion] == ["assistant", "tool", "tool", "assistant"]
        assert all("arbiter episode unavailable" in m["content"] for m in completion[1:3]), completion
        assert logs["trainer/unreachable"] == 1 and logs["status/upstream_error"] == 1
    assert down["rewards"] == [None] * 4, "unscorable, not a fake zero"

    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 3, "every step trained, the one after the outage too"
    for entry, call in zip(logged[:2], served, strict=True):
        assert entry["rewards/arbiter_episode/mean"] == pytest.approx(sum(call["rewards"]) / 4)
        assert entry["tools/call_frequency"] == 2.0 and entry["tools/failure_frequency"] == 0.0
        assert entry["arbiter/unscored"] == 0.0 and entry["episode/tool_calls"] == 2.0
    outage = logged[2]
    assert outage["tools/failure_frequency"] == 1.0, "TRL counted the failed tool calls"
    assert outage["arbiter/unscored"] == 1.0 and outage["trainer/unreachable"] == 1.0
