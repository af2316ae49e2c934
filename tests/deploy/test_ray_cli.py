"""`arbiter serve --ray` with the shipped deploy/ray_serve.yaml, as a user starts it, on a local Ray.

The shipped file asks for more CPUs than a small machine has (5 at the minimum replica
counts); the command must still serve, by fitting the requests to the cluster, and Serve must
accept its autoscaling configs without warnings. Then OpenRLHF-shaped requests get the right
rewards, and SIGTERM deletes the application and exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from testkit.procs import free_port

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(600)]
ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")

from services import ray_serve  # noqa: E402  (after importorskip: needs ray)

ARBITER = Path(sys.executable).parent / "arbiter"
CONFIG = {
    "cache": {"backend": "memory"},
    "gateway": {
        "routes": [{"recipe": "math"}],
        "recipes": {"math": {"components": {"correct": {"grader": "math"}}, "score": "correct"}},
    },
}


def test_shipped_autoscaling_configs_are_valid_for_serve() -> None:
    from ray.serve.config import AutoscalingConfig

    for name, option in ray_serve.read_serve_config()["options"].items():
        config = option.get("autoscaling_config")
        if config is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # Serve warns (for now) where it will raise later
            parsed = AutoscalingConfig(**config)
        assert parsed.look_back_period_s > parsed.metrics_interval_s, name
        assert parsed.min_replicas <= parsed.max_replicas, name


def test_requests_are_fitted_to_a_small_cluster() -> None:
    options = ray_serve.read_serve_config()["options"]
    deployments = ["gateway", "reward_rules"]
    assert ray_serve.minimum_cpus(options, deployments) > 2  # the shipped file suits a big node
    fitted = ray_serve.fit_to_cluster(options, deployments, 2.0)
    assert ray_serve.minimum_cpus(fitted, deployments) <= 2.0
    ratio = (
        options["reward_rules"]["ray_actor_options"]["num_cpus"]
        / options["gateway"]["ray_actor_options"]["num_cpus"]
    )
    fitted_ratio = (
        fitted["reward_rules"]["ray_actor_options"]["num_cpus"]
        / fitted["gateway"]["ray_actor_options"]["num_cpus"]
    )
    assert abs(fitted_ratio - ratio) < 0.05  # proportions kept
    assert ray_serve.fit_to_cluster(options, deployments, 64.0) == options  # a big cluster: untouched


def body(k: int, correct: bool) -> dict[str, list[str]]:
    prompt = f"<|im_start|>user\nWhat is {k} times 3?<|im_end|>\n<|im_start|>assistant\n"
    answer = 3 * k if correct else 3 * k + 1
    return {"query": [prompt + f"\\boxed{{{answer}}}<|im_end|>"], "prompts": [prompt], "labels": [str(3 * k)]}


async def score_all(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        replies = await asyncio.gather(
            *(http.post("/get_reward", json=body(k, k % 2 == 0)) for k in range(24))
        )
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies if r.status_code != 200]
    return [r.json() for r in replies]


def test_arbiter_serve_ray_with_the_shipped_file_serves(tmp_path: Path) -> None:
    config = tmp_path / "arbiter.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "ARBITER_GATEWAY__HTTP_PORT": str(port), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("ARBITER_CONFIG", None)
    command = [str(ARBITER), "serve", "--ray", "--config", str(config), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 400
        while True:
            assert process.poll() is None, f"arbiter serve --ray exited:\n{log.read_text()[-6000:]}"
            try:
                # Serving, and saying so: the command has its signal handlers from that line on.
                if "arbiter on Ray Serve:" in log.read_text() and (
                    httpx.get(f"{url}/healthz", timeout=2).status_code == 200
                ):
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"/healthz never answered:\n{log.read_text()[-6000:]}"
            time.sleep(2)
        replies = asyncio.run(score_all(url))
        for k, reply in enumerate(replies):
            want = 1.0 if k % 2 == 0 else 0.0
            assert reply["rewards"] == [want] and reply["extra_logs"]["component/correct/ok"] == [1.0], reply
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text()
    assert process.returncode == 0, text[-6000:]
    for complaint in ("look_back_period_s", "No available node types can fulfill"):
        assert complaint not in text, text[-6000:]
