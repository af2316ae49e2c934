"""Launch recipes: valid shell, every flag known to OpenRLHF 0.11.2, configs that load."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from services import catalog
from services.settings import load

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
SCRIPTS = sorted(RECIPES.glob("*.sh"))
CONFIGS = sorted((RECIPES / "configs").glob("*.yaml"))


def openrlhf_flags() -> set[str]:
    """Every flag train_ppo_ray.py declares, read from the installed source (no torch needed)."""
    spec = importlib.util.find_spec("openrlhf")
    assert spec and spec.submodule_search_locations, (
        "openrlhf is not installed (scripts/bootstrap.sh does it)"
    )
    source = (Path(next(iter(spec.submodule_search_locations))) / "cli" / "train_ppo_ray.py").read_text()
    flags = set(re.findall(r'"(--[a-z_.0-9]+)"', source))
    for template in re.findall(r'f"(--\{prefix\}[a-z_.0-9]+)"', source):
        flags |= {template.replace("{prefix}", prefix) for prefix in ("actor", "critic")}
    return flags


def test_recipes_exist() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"grpo_math.sh", "prorl_v2.sh", "code_rl.sh", "ppo_rm_70b.sh", "start_reward_services.sh"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash(script: Path) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "script", [s for s in SCRIPTS if "train_ppo_ray" in s.read_text()], ids=lambda p: p.name
)
def test_every_trainer_flag_exists_in_openrlhf(script: Path) -> None:
    known = openrlhf_flags()
    assert "--reward.remote_url" in known and "--actor.adam.lr" in known  # the reader works
    command = script.read_text().split("train_ppo_ray", 1)[1]
    used = set(re.findall(r"(?<![\w-])(--[a-z_][a-z_.0-9]*)", command))
    assert used, "no flags found"
    assert used <= known, f"unknown to openrlhf 0.11.2: {sorted(used - known)}"
    assert "--reward.remote_url" in used


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_configs_load_and_build_a_gateway(config: Path) -> None:
    settings = load(config)
    grader = catalog.build_gateway_grader(settings, peers={})
    assert grader.info.name == "gateway"
