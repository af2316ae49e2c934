"""A real vLLM CPU server on a free loopback port, serving a tiny checkpoint, for the vLLM tier.

Skips unless the vLLM venv exists or the run asked for it (`-m vllm`, ARBITER_VLLM_CREATE=1),
creating the venv then (3.5 GB, minutes); fails with the server's log when it does not come up.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.reward_rm.checkpoint import read_checkpoint
from services.reward_rm.launch import LaunchOptions, vllm_command
from tests.helpers import free_port
from tests.reward_rm import vllm_venv

HEALTHY_WITHIN_S = 600


def serve_vllm(
    checkpoint: Path, served_name: str, log_dir: Path, request: pytest.FixtureRequest
) -> Iterator[str]:
    """Yield the base URL of `vllm_command`'s server for the checkpoint; stop it after."""
    asked = "vllm" in (request.config.option.markexpr or "") or os.environ.get("ARBITER_VLLM_CREATE") == "1"
    if not asked and not vllm_venv.has_vllm(vllm_venv.venv_python()):
        pytest.skip(
            f"no vLLM venv at {vllm_venv.venv_dir()}: `pytest -m vllm tests/reward_rm` creates it "
            "(3.5 GB, minutes) and runs these tests"
        )
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
        served_model_name=served_name,
        # On the CPU backend this is the share of host memory vLLM reserves; the default 0.92 fails.
        extra=("--gpu-memory-utilization", "0.2"),
    )
    command = vllm_command(read_checkpoint(checkpoint), options)
    log_path = log_dir / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HEALTHY_WITHIN_S
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
            pytest.fail(f"vLLM server not healthy in {HEALTHY_WITHIN_S} s:\n{log_path.read_text()[-4000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
