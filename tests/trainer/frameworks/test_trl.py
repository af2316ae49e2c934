"""TRL 1.16's GRPOTrainer trains a tiny, locally built model with Arbiter's reward function.

Nothing comes from a hub: the tokenizer is trained in memory and the model is random. The
completion is one token, "5" or "6" (every other token suppressed), so the right reward of
each sample is known: 1 when it equals the row's `answer` column, else 0 (the embedded
defaults grade a plain answer with the math grader). Mid-run the gateway is killed: the
reward function answers None ("unscorable") and training goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit.tiny_checkpoints import build_policy, build_tokenizer
from tests.trainer.frameworks.running import RunningGateway

pytestmark = pytest.mark.frameworks

trl = pytest.importorskip("trl", reason="runs in .venv-trl (scripts/test-frameworks.sh)")


def tiny_model(root: Path) -> tuple[Path, Any]:
    tokenizer = build_tokenizer()
    return build_policy(root / "tiny-policy", tokenizer), tokenizer


class Recorder:
    """Arbiter's TRL reward function, with what TRL handed it and what it answered."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.__name__ = inner.__name__
        self.calls: list[tuple[list[str], list[str], list[float | None]]] = []

    def __call__(self, prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        rewards = self.inner(prompts=prompts, completions=completions, **columns)
        self.calls.append((list(completions), list(columns["answer"]), list(rewards)))
        return rewards  # type: ignore[no-any-return]


def test_grpo_trainer_trains_on_arbiter_rewards_and_survives_an_outage(
    gateway: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from arbiter.adapters import gateway as connection_module
    from arbiter.adapters.trl_reward import UNSCORED_METRIC, arbiter_reward

    monkeypatch.setenv("ARBITER_GATEWAY", gateway.grpc_target)
    monkeypatch.setenv("ARBITER_GATEWAY_WAIT_S", "1")
    monkeypatch.setattr(connection_module, "_connection", None)
    model_path, tokenizer = tiny_model(tmp_path)
    allowed = {tokenizer.convert_tokens_to_ids("5"), tokenizer.convert_tokens_to_ids("6")}
    rows = [{"prompt": f"What is {a}+{b}? ", "answer": str(a + b)} for a, b in [(2, 3), (3, 3)] * 4]

    class KillGatewayAfterStep(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 2:
                gateway.process.proc.kill()  # type: ignore[union-attr]
                gateway.process.proc.wait()  # type: ignore[union-attr]

    reward = Recorder(arbiter_reward(label_column="answer"))
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        max_steps=4,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=1,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
        generation_kwargs={"suppress_tokens": [i for i in range(len(tokenizer)) if i not in allowed]},
    )
    trainer = GRPOTrainer(
        model=str(model_path),
        reward_funcs=[reward],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[KillGatewayAfterStep()],
    )
    trainer.train()

    assert len(reward.calls) == 4, "one reward call per step"
    scored = reward.calls[:2]
    for completions, answers, rewards in scored:
        assert set(completions) <= {"5", "6"}
        assert rewards == [1.0 if c == a else 0.0 for c, a in zip(completions, answers, strict=True)]
    assert any(r == 1.0 for _, _, rs in scored for r in rs) and any(
        r == 0.0 for _, _, rs in scored for r in rs
    )
    for _, _, rewards in reward.calls[2:]:
        assert rewards == [None] * len(rewards), "gateway down: unscorable, not a fake zero"
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 4, "every step trained, the ones after the outage too"
    unscored = [entry[UNSCORED_METRIC] for entry in logged]
    assert unscored == [0.0, 0.0, 1.0, 1.0], "the outage shows in TRL's own logs"
