"""veRL 0.9.1 for real: its Hydra config, its reward loader and NaiveRewardManager, and
RewardLoopManager's Ray workers on a local CPU Ray, against a gateway process.

Also pins the config key of each veRL line: on 0.9 only
`reward.custom_reward_function.path` loads our function; the legacy top-level key is
accepted by Hydra and silently ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from testkit.tiny_checkpoints import build_tokenizer
from tests.trainer.frameworks.proxy import FirstClientOnly
from tests.trainer.frameworks.running import RunningGateway

pytestmark = pytest.mark.frameworks

verl = pytest.importorskip("verl", reason="runs in .venv-verl (scripts/test-frameworks.sh)")

REPO = Path(__file__).resolve().parents[3]
ADAPTER = REPO / "trainer" / "verl_reward.py"
MANAGER = REPO / "trainer" / "verl_manager.py"
RECORDER = Path(__file__).with_name("recording_reward.py")
# (data_source, response, ground_truth, expected score): plain references as veRL datasets carry them.
ROWS = [
    ("openai/gsm8k", "2 + 3 = 5\n#### 5", "5", 1.0),
    ("openai/gsm8k", "2 + 3 = 6\n#### 6", "5", 0.0),
    ("lighteval/MATH", "so \\boxed{\\frac{1}{2}}", "\\frac{1}{2}", 1.0),
    ("lighteval/MATH", "so \\boxed{3}", "4", 0.0),
]


def compose(overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-tokenizer")
    build_tokenizer().save_pretrained(path)
    return path


def config_for(tokenizer_dir: Path, workers: int = 2) -> Any:
    return compose(
        [
            f"reward.custom_reward_function.path={ADAPTER}",
            "reward.custom_reward_function.name=compute_score",
            f"reward.num_workers={workers}",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        ]
    )


def batch(tokenizer: Any, rows: list[tuple[str, str, str, float]], prompt: str = "q") -> Any:
    """A DataProto shaped like veRL's rollout output: left-padded prompts, right-padded responses."""
    import torch
    from verl import DataProto

    prompt_len, response_len = 16, 24
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"][-prompt_len:]
    prompts = torch.full((len(rows), prompt_len), tokenizer.pad_token_id)
    prompts[:, prompt_len - len(prompt_ids) :] = torch.tensor(prompt_ids)
    responses = torch.full((len(rows), response_len), tokenizer.pad_token_id)
    mask = torch.zeros((len(rows), prompt_len + response_len), dtype=torch.long)
    for i, (_, response, _, _) in enumerate(rows):
        ids = tokenizer(response, add_special_tokens=False)["input_ids"][:response_len]
        responses[i, : len(ids)] = torch.tensor(ids)
        mask[i, prompt_len - len(prompt_ids) : prompt_len] = 1
        mask[i, prompt_len : prompt_len + len(ids)] = 1
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={
            "data_source": np.array([r[0] for r in rows], dtype=object),
            "reward_model": np.array([{"ground_truth": r[2]} for r in rows], dtype=object),
            "extra_info": np.array(
                [{"question": "What is it?", "index": i} for i in range(len(rows))], dtype=object
            ),
        },
    )


def test_each_veRL_line_has_its_config_key(tokenizer_dir: Path) -> None:
    current = config_for(tokenizer_dir)
    assert current.reward.custom_reward_function.path == str(ADAPTER)
    legacy = compose(
        [f"custom_reward_function.path={ADAPTER}", f"actor_rollout_ref.model.path={tokenizer_dir}"]
    )
    assert legacy.reward.custom_reward_function.path is None, "0.9 ignores the legacy key: README says so"
    # The README's way to hand the reward workers (Ray actors) the adapter's settings.
    env = compose(["+ray_kwargs.ray_init.runtime_env.env_vars.ARBITER_GATEWAY=gw:9100"])
    assert env.ray_kwargs.ray_init.runtime_env.env_vars.ARBITER_GATEWAY == "gw:9100"


def test_verl_reward_loader_and_naive_manager_score_plain_references(
    gateway: RunningGateway, tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import load_reward_manager

    from arbiter.adapters import gateway as connection_module

    monkeypatch.setenv("ARBITER_GATEWAY", gateway.grpc_target)
    monkeypatch.setattr(connection_module, "_connection", None)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    manager = load_reward_manager(config_for(tokenizer_dir), tokenizer)
    data = batch(tokenizer, ROWS)

    async def run() -> list[dict[str, Any]]:
        return [await manager.run_single(data[i : i + 1]) for i in range(len(data))]

    outputs = manager.loop.run_until_complete(run())  # the loop veRL's manager was built on
    assert [o["reward_score"] for o in outputs] == [r[3] for r in ROWS]
    assert len({frozenset(o["reward_extra_info"]) for o in outputs}) == 1


def test_arbiter_reward_manager_hands_over_the_prompt_from_the_batch(
    gateway: RunningGateway, tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows without a prompt in extra_info still send one (decoded from `prompts`)."""
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import load_reward_manager

    from arbiter.adapters import gateway as connection_module

    monkeypatch.setenv("ARBITER_GATEWAY", gateway.grpc_target)
    monkeypatch.setattr(connection_module, "_connection", None)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = compose(
        [
            f"reward.custom_reward_function.path={RECORDER}",
            "reward.custom_reward_function.name=compute_score",
            "reward.reward_manager.source=importlib",
            f"reward.reward_manager.module.path={MANAGER}",
            "reward.reward_manager.name=ArbiterRewardManager",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        ]
    )
    manager = load_reward_manager(config, tokenizer)
    data = batch(tokenizer, ROWS[:2], prompt="what is the sum")
    data.non_tensor_batch["extra_info"] = np.array([{"index": 0}, {"index": 1}], dtype=object)
    outputs = [manager.loop.run_until_complete(manager.run_single(data[i : i + 1])) for i in range(2)]
    assert [o["reward_score"] for o in outputs] == [r[3] for r in ROWS[:2]]
    seen = manager.compute_score.args[0].__globals__["SEEN"]  # the recorder file veRL loaded
    assert [info["prompt"] for info in seen] == ["what is the sum", "what is the sum"]


def test_reward_loop_manager_on_ray_with_one_worker_cut_off(
    gateway: RunningGateway, tokenizer_dir: Path
) -> None:
    """The issue's crash (KeyError 'trainer/unreachable' in reward_loop.py): one batch where one
    worker reaches the gateway and the other never does. Now: every sample scored or flagged."""
    import ray
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop import RewardLoopManager

    host, port = gateway.grpc_target.rsplit(":", 1)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = ROWS * 2  # two workers, one chunk of four each
    with FirstClientOnly((host, int(port))) as relay:
        # The reward workers are Ray actors: the adapter's settings reach them through Ray's
        # runtime_env (veRL: ray_kwargs.ray_init.runtime_env), or an export before `ray start`.
        env = {"ARBITER_GATEWAY": f"127.0.0.1:{relay.port}", "ARBITER_GATEWAY_WAIT_S": "1"}
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
        try:
            manager = RewardLoopManager(config_for(tokenizer_dir, workers=2))
            out = manager.compute_rm_score(batch(tokenizer, rows))
        finally:
            ray.shutdown()
    scores = out.batch["rm_scores"].sum(dim=1).tolist()
    unreachable = out.non_tensor_batch["trainer/unreachable"].tolist()
    ok = out.non_tensor_batch["status/ok"].tolist()
    chunks = [(0, 4), (4, 8)]
    reached = [all(unreachable[i] == 0.0 for i in range(a, b)) for a, b in chunks]
    assert sorted(reached) == [False, True], f"one worker in, one cut off: {unreachable}"
    for (a, b), got_through in zip(chunks, reached, strict=True):
        for i in range(a, b):
            if got_through:
                assert scores[i] == rows[i][3] and ok[i] == 1.0
            else:
                assert scores[i] == 0.0 and ok[i] == 0.0 and unreachable[i] == 1.0
    assert "acc" in out.meta_info["reward_extra_keys"]
