"""Launch recipes: valid shell, accepted by OpenRLHF 0.11.2's own parser and post-parse checks,
and the Arbiter configs they name exist and build a gateway."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from services import catalog
from services.settings_tree import load
from tests.trainer.openrlhf_cli import OpenRLHFRejected, parse_train_ppo_ray

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
SCRIPTS = sorted(RECIPES.glob("*.sh"))
TRAINING = [s for s in SCRIPTS if "train_ppo_ray" in s.read_text()]
CONFIGS = sorted((RECIPES / "configs").glob("*.yaml"))
GATEWAY = "http://gateway.example:8100"


def test_recipes_exist() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"grpo_math.sh", "prorl_v2.sh", "code_rl.sh", "ppo_rm_70b.sh", "start_reward_services.sh"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash(script: Path) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def recipe_argv(script: Path, tmp_path: Path) -> list[str]:
    """The arguments the script hands OpenRLHF, as bash expands them (a stand-in python3 records them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "python3"
    fake.write_text('#!/bin/sh\nprintf \'%s\\0\' "$@" > "$ARGV_OUT"\n')
    fake.chmod(0o755)
    out = tmp_path / "argv"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGV_OUT": str(out), "GATEWAY": GATEWAY}
    subprocess.run(["bash", str(script)], env=env, check=True, capture_output=True)
    argv = out.read_text().split("\0")[:-1]
    assert argv[:2] == ["-m", "openrlhf.cli.train_ppo_ray"], argv[:3]
    return argv[2:]


@pytest.mark.parametrize("script", TRAINING, ids=lambda p: p.name)
def test_openrlhf_accepts_the_recipe(script: Path, tmp_path: Path) -> None:
    args = parse_train_ppo_ray(recipe_argv(script, tmp_path))
    if args.train.agent_func_path:  # an agent run: OpenRLHF calls the agent file, never a reward URL
        assert args.reward.remote_url == ["agent"]
        assert args.train.agent_func_path.endswith("openrlhf_agent.py")
    else:
        assert args.reward.remote_url == [f"{GATEWAY}/get_reward"]  # one URL: the gateway routes
    assert args.reward.model_name_or_path is None, "the reward comes from Arbiter, not a local RM"
    if args.algo.dynamic_filtering_enable:
        assert list(args.algo.dynamic_filtering_range) == [0.0, 1.0], "filters on Arbiter's 0/1 scores"


def test_recipe_intent_survives_openrlhf_post_parse_adjustments(tmp_path: Path) -> None:
    parsed: dict[str, SimpleNamespace] = {
        s.name: parse_train_ppo_ray(recipe_argv(s, tmp_path / s.stem)) for s in TRAINING
    }
    grpo, prorl, ppo = parsed["grpo_math.sh"], parsed["prorl_v2.sh"], parsed["ppo_rm_70b.sh"]
    assert grpo.data.label_key == "answer" and grpo.algo.advantage.estimator == "group_norm"
    assert prorl.actor.eps_clip_low_high == [0.2, 0.27] and prorl.rollout.n_samples_per_prompt == 16
    assert ppo.algo.advantage.estimator == "gae" and ppo.critic.model_name_or_path == "/ckpt/llama-3-70b-rm"


def test_openrlhf_parser_rejects_what_openrlhf_rejects() -> None:
    """The reader really runs OpenRLHF's checks: unknown flags and failed assertions are refused."""
    with pytest.raises(OpenRLHFRejected, match=r"unrecognized arguments: --reward\.remote_urll"):
        parse_train_ppo_ray(["--reward.remote_urll", "http://x/get_reward"])
    with pytest.raises(OpenRLHFRejected, match="n_samples_per_prompt"):
        parse_train_ppo_ray(["--reward.remote_url", "http://x", "--algo.advantage.estimator", "group_norm"])


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_configs_a_recipe_names_exist(script: Path) -> None:
    for name in re.findall(r"configs/([\w.-]+\.yaml)", script.read_text()):
        assert (RECIPES / "configs" / name).is_file(), f"{script.name} names configs/{name}"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_configs_load_and_build_a_gateway(config: Path) -> None:
    settings = load(config)
    grader = catalog.build_gateway_grader(settings, peers={})
    assert grader.info.name == "gateway"
