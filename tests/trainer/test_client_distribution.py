"""What a trainer installs: the arbiter-client wheel, alone in a fresh environment.

`pip install ./client` must add one top-level package, `arbiter` (names such as `services`,
`trainer` or `deploy` are common in trainer repos and would shadow or be shadowed), and its
adapters must work from there without the repository: the wheel is built from client/, installed
into a fresh venv whose only other path is the third-party packages it depends on, and run from a
directory outside the repository against a live gateway on loopback.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.trainer.gateways import make_gateway

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RIGHT = "<think>2+3=5</think> The answer is \\boxed{5}"
WRONG = "<think>2+3=6</think> The answer is \\boxed{6}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: an in-tree build leaves build/ behind, whose stale files a later wheel keeps.
    source = out / "client"
    shutil.copytree(
        ROOT / "client", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "--wheel-dir", str(out), str(source)], check=True, timeout=300)
    [built] = out.glob("arbiter_client-*.whl")
    return built


@pytest.fixture(scope="module")
def client_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed by pip; its dependencies come from this interpreter's
    site-packages through a path file (no index is reached), never the repository."""
    env_dir = tmp_path_factory.mktemp("client-venv")
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    subprocess.run([*install, "--target", str(site), str(wheel)], check=True, timeout=300)
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_wheel_holds_only_the_arbiter_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"arbiter", "arbiter_client-0.1.0.dist-info"}
    for needed in ("arbiter/v1/reward_pb2.py", "arbiter/contract.py", "arbiter/adapters/gateway.py"):
        assert needed in names
    assert not [name for name in names if name.endswith(".pyc")]


def test_the_install_adds_one_top_level_name(client_python: Path) -> None:
    site = client_python.parents[1] / "lib"
    [purelib] = site.glob("python3*/site-packages")
    added = {path.name for path in purelib.iterdir()} - {"zz_dependencies.pth", "__pycache__"}
    assert {name for name in added if not name.endswith(".dist-info")} == {"arbiter"}
    assert [name for name in added if name.endswith(".dist-info")] == ["arbiter_client-0.1.0.dist-info"]


def run_outside_the_repo(python: Path, code: str, tmp_path: Path, *args: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ARBITER_"))}
    done = subprocess.run(
        [str(python), "-c", code, *args],
        cwd=tmp_path,
        env={**clean, **env},
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def test_the_repo_packages_are_absent(client_python: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.util, json\n"
        "print(json.dumps({n: importlib.util.find_spec(n) is not None "
        "for n in ('arbiter', 'services', 'trainer', 'deploy')}))\n"
    )
    found = json.loads(run_outside_the_repo(client_python, code, tmp_path))
    assert found == {"arbiter": True, "services": False, "trainer": False, "deploy": False}


# Run by the fresh venv's python: TRL's and veRL's adapters against the gateway in ARBITER_GATEWAY.
ADAPTER_CALLS = """
import json, sys, arbiter
from arbiter.adapters.trl_reward import arbiter_reward
from arbiter.adapters.verl_reward import compute_score
venv, right, wrong = sys.argv[1:]
assert arbiter.__file__.startswith(venv), arbiter.__file__
reward = arbiter_reward(label_column="answer")
trl = reward(prompts=["2+3?"] * 2, completions=[right, wrong], answer=["5"] * 2)
verl = compute_score("openai/gsm8k", "2 + 3 = 5\\n#### 5", "5", extra_info={"question": "2+3?"})
print(json.dumps({"trl": trl, "verl": verl["score"], "unreachable": verl.get("trainer/unreachable")}))
"""


async def test_an_installed_adapter_scores_against_a_live_gateway(
    client_python: Path, tmp_path: Path
) -> None:
    async with make_gateway() as gateway:
        # The child blocks on the gateway this loop serves: it runs off the loop.
        run = functools.partial(run_outside_the_repo, ARBITER_GATEWAY=gateway.grpc_target)
        out = await asyncio.to_thread(
            run, client_python, ADAPTER_CALLS, tmp_path, str(client_python.parents[1]), RIGHT, WRONG
        )
    assert json.loads(out.strip().splitlines()[-1]) == {"trl": [1.0, 0.0], "verl": 1.0, "unreachable": 0.0}
