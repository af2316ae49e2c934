"""The OpenRLHF agent recipe: OpenRLHF's own parser takes it, it names the agent file that exists,
and its Arbiter config puts episodes where its recipe grades the final answers."""

from __future__ import annotations

from pathlib import Path

from services.settings_tree import load
from tests.trainer.openrlhf_cli import parse_train_ppo_ray
from tests.trainer.test_recipes import RECIPES, recipe_argv


def test_the_agent_recipe_runs_arbiters_agent_file(tmp_path: Path) -> None:
    args = parse_train_ppo_ray(recipe_argv(RECIPES / "agent_math_python.sh", tmp_path))
    agent = Path(args.train.agent_func_path).resolve()
    assert agent == (RECIPES.parent / "openrlhf_agent.py").resolve() and agent.is_file()
    assert args.reward.remote_url == ["agent"] and args.data.label_key == "answer"
    assert args.rollout.n_samples_per_prompt == 8 and args.algo.advantage.estimator == "group_norm"


def test_the_agent_config_serves_episodes_on_the_gateway() -> None:
    settings = load(RECIPES / "configs" / "agent_math.yaml")
    assert settings.episodes.enabled and settings.episodes.service == "gateway"
    assert settings.episodes.python_tool.max_turns == 6
    assert settings.gateway.recipes["math"].formula == "correct"
