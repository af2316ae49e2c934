"""The compose stack for real: deploy/docker-compose.yml up on a Docker engine, traffic, a kill, down.

Slow tier, run by `.ci/compose` (which installs Docker, builds the base images and the service
images, then runs this file with ARBITER_COMPOSE=1); a plain test run skips it. The stack is the
shipped file plus tests/deploy/compose.ci.yml (a fake OpenAI-compatible judge upstream), with the
`judge` and `rm-cpu` profiles on and the reward model a tiny checkpoint built here. Through the
gateway, OpenRLHF-shaped (one sample per POST, a fresh connection per attempt):
- a math burst during which one reward_rules replica's process is SIGKILLed: every sample graded, none
  a fallback, and the replica comes back by itself (restart policy);
- a code burst: every program run in the container's bubblewrap sandbox, every verdict right;
- reward-model samples equal to a direct HF forward of the same checkpoint;
- judge samples answered by the fake upstream container.
Then `down -v` leaves no container, volume or network, and nothing new in the checkout.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.openrlhf_client import Reply, post_one
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "arbiter-ci"
PROFILES = ("judge", "rm-cpu")
MATH_BURST = 1200
CODE_BURST = 1000
CLIENTS = 256

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(
        os.environ.get("ARBITER_COMPOSE") != "1",
        reason="compose tier: run by .ci/compose (needs a Docker engine and the built images)",
    ),
]


def compose_command(project: str = PROJECT) -> list[str]:
    base = ["docker", "compose"] if shutil.which("docker-compose") is None else ["docker-compose"]
    files = ["-f", str(ROOT / "deploy/docker-compose.yml"), "-f", str(ROOT / "tests/deploy/compose.ci.yml")]
    profiles = [arg for name in PROFILES for arg in ("--profile", name)]
    return [*base, "-p", project, *files, *profiles]


def run(
    args: list[str], env: dict[str, str], check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"$ {' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


def docker_lines(*args: str) -> list[str]:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=True)
    return [line for line in done.stdout.splitlines() if line.strip()]


def leftovers(project: str) -> list[str]:
    label = f"label=com.docker.compose.project={project}"
    return (
        docker_lines("ps", "-aq", "--filter", label)
        + docker_lines("volume", "ls", "-q", "--filter", label)
        + docker_lines("network", "ls", "-q", "--filter", label)
    )


def checkout_state() -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "deploy"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout


class Stack:
    def __init__(self, env: dict[str, str], http_port: int) -> None:
        self.env = env
        self.url = f"http://127.0.0.1:{http_port}/get_reward"

    def compose(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([*compose_command(), *args], self.env, check=check)

    def containers(self, service: str) -> list[str]:
        return self.compose("ps", "-q", service).stdout.split()

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail", "60", check=False).stdout[-20000:]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from testkit.tiny_checkpoints import build

    checkpoints = build(tmp_path_factory.mktemp("compose_rm"))
    for path in [checkpoints.openrlhf, *checkpoints.openrlhf.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the containers run as uid 10001
    for parent in checkpoints.openrlhf.parents:
        if parent == Path("/tmp") or parent == parent.parent:
            break
        parent.chmod(parent.stat().st_mode | 0o055)
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "RM_CHECKPOINT_DIR": str(checkpoints.openrlhf),
        "GATEWAY_HTTP_PORT": str(http_port),
        "GATEWAY_GRPC_PORT": str(grpc_port),
        "REWARD_RULES_REPLICAS": "2",
    }
    before = checkout_state()
    stack = Stack(env, http_port)
    stack.checkpoints = checkpoints  # type: ignore[attr-defined]
    try:
        stack.compose("up", "-d", "--no-build", "--wait", "--wait-timeout", "420")
    except AssertionError:
        print(stack.logs())
        stack.compose("down", "-v", "--remove-orphans", check=False)
        raise
    try:
        yield stack
    finally:
        if os.environ.get("ARBITER_COMPOSE_KEEP") != "1":
            down = stack.compose("down", "-v", "--remove-orphans", "--timeout", "20", check=False)
            assert down.returncode == 0, down.stderr
            assert leftovers(PROJECT) == [], "down -v left containers, volumes or networks"
            assert checkout_state() == before, "the stack wrote into the checkout"


def openrlhf_body(prompt: str, response: str, label: str) -> dict[str, Any]:
    return {"query": [prompt + response], "prompts": [prompt], "labels": [label]}


async def burst(url: str, bodies: list[dict[str, Any]], kill: Any = None) -> list[Reply]:
    """OpenRLHF's client: one POST per sample, `CLIENTS` at a time; `kill()` runs after 10% answered."""
    replies: list[Reply | None] = [None] * len(bodies)
    turn = iter(range(len(bodies)))
    answered = 0
    tenth = asyncio.Event()

    async def client() -> None:
        nonlocal answered
        for index in turn:
            replies[index] = await post_one(url, bodies[index])
            answered += 1
            if answered >= len(bodies) // 10:
                tenth.set()

    tasks = [asyncio.create_task(client()) for _ in range(CLIENTS)]
    if kill is not None:
        await tenth.wait()
        await asyncio.to_thread(kill)
        assert answered < len(bodies) * 0.9, "the burst was over before the kill"
    await asyncio.gather(*tasks)
    return [r if r is not None else Reply(0, None, 0.0) for r in replies]


def test_math_burst_survives_a_replica_killed_mid_burst(stack: Stack) -> None:
    replicas = stack.containers("reward_rules")
    assert len(replicas) == 2, replicas
    victim = replicas[0]
    bodies, expected = [], []
    for i in range(MATH_BURST):
        prompt = f"<|im_start|>user\nrun {i}: what is {i % 7} + 0?<|im_end|>\n<|im_start|>assistant\n"
        response = f"<think>easy</think> The answer is \\boxed{{{i % 7}}}<|im_end|>"
        bodies.append(openrlhf_body(prompt, response, str(i % 5)))
        expected.append(1.0 if i % 7 == i % 5 else 0.0)

    def kill() -> None:
        # SIGKILL to the replica's process from the host, as a crash or the OOM killer would:
        # `docker kill` is an operator's stop, which Docker never restarts, whatever the policy.
        os.kill(int(docker_lines("inspect", "--format", "{{.State.Pid}}", victim)[0]), signal.SIGKILL)

    replies = asyncio.run(burst(stack.url, bodies, kill))
    failed = [(i, r.status) for i, r in enumerate(replies) if not r.ok]
    assert not failed, f"{len(failed)} samples unanswered, e.g. {failed[:5]}\n{stack.logs()}"
    fallbacks = [
        i for i, r in enumerate(replies) if r.data and r.data["extra_logs"]["component/correct/ok"] != [1.0]
    ]
    assert fallbacks == [], f"{len(fallbacks)} fallbacks, e.g. {replies[fallbacks[0]].data}"
    for i, (reply, want) in enumerate(zip(replies, expected, strict=True)):
        assert reply.data is not None
        assert reply.data["scores"] == [want], (i, reply.data)
        assert (reply.data["rewards"][0] >= 0.9) == (want == 1.0), (i, reply.data)

    # restart policy: the killed replica comes back by itself, healthy
    deadline = time.monotonic() + 120
    while True:
        state = json.loads(docker_lines("inspect", "--format", "{{json .State}}", victim)[0])
        if state.get("Health", {}).get("Status") == "healthy":
            break
        assert time.monotonic() < deadline, f"the killed replica did not come back: {state}"
        time.sleep(2)
    restarts = docker_lines("inspect", "--format", "{{.RestartCount}}", victim)[0]
    assert int(restarts) >= 1


CODE_KINDS = ("call", "assert", "check", "stdio")


def code_sample(i: int) -> tuple[dict[str, Any], float]:
    """A distinct program per sample (no cache hits), right or wrong by turns, in every test kind."""
    right = i % 3 != 0
    k = i if right else i + 1
    program = f"def f(x):\n    return x + {k}\n"
    kind = CODE_KINDS[i % len(CODE_KINDS)]
    tests: dict[str, Any]
    if kind == "call":
        tests = {
            "kind": "call",
            "entry_point": "f",
            "cases": [{"args": [j], "expected": j + i} for j in range(3)],
        }
    elif kind == "assert":
        tests = {
            "kind": "assert",
            "entry_point": "f",
            "asserts": [f"assert f({j}) == {j + i}" for j in range(3)],
        }
    elif kind == "check":
        test = f"def check(candidate):\n    assert candidate(2) == {2 + i}\n    assert candidate(0) == {i}\n"
        tests = {"kind": "check", "entry_point": "f", "test": test}
    else:
        program += "print(f(int(input())))\n"
        tests = {"kind": "stdio", "cases": [{"input": "5\n", "output": f"{5 + i}\n"}]}
    prompt = f"<|im_start|>user\nWrite f for task {i} in ```python```.<|im_end|>\n<|im_start|>assistant\n"
    response = f"<think>ok</think>\n```python\n{program}```<|im_end|>"
    label = json.dumps({"grader": "code", "tests": tests})
    return openrlhf_body(prompt, response, label), 1.0 if right else 0.0


def test_code_burst_runs_every_program_in_the_container_sandbox(stack: Stack) -> None:
    samples = [code_sample(i) for i in range(CODE_BURST)]
    replies = asyncio.run(burst(stack.url, [body for body, _ in samples]))
    wrong = []
    for i, (reply, (_, want)) in enumerate(zip(replies, samples, strict=True)):
        logs = reply.data["extra_logs"] if reply.data else {}
        if not reply.ok or logs.get("status/ok") != [1.0] or reply.data["rewards"] != [want]:  # type: ignore[index]
            wrong.append((i, CODE_KINDS[i % len(CODE_KINDS)], reply.data))
    assert wrong == [], f"{len(wrong)} wrong, e.g. {wrong[:3]}\n{stack.logs()}"
    # nothing left behind: orphaned sandbox processes are reaped (tini is PID 1), so the pids in
    # each replica's cgroup stay near its idle count instead of growing with every sample
    for container in stack.containers("reward_rules"):
        pids = docker_lines(
            "exec",
            container,
            "sh",
            "-c",
            "cat /sys/fs/cgroup/pids/pids.current 2>/dev/null || cat /sys/fs/cgroup/pids.current",
        )
        assert int(pids[0]) < 300, f"{container}: {pids[0]} processes after the burst"


def test_reward_model_in_its_container_matches_a_direct_forward(stack: Stack) -> None:
    import random

    from testkit.tiny_checkpoints import sentence
    from tests.reward_rm.reference import EOS, Reference, openrlhf_text

    tiny = stack.checkpoints  # type: ignore[attr-defined]
    ref = Reference(tiny.openrlhf, tiny.mean, tiny.std, normalize=True)
    rng = random.Random(5)
    bodies, expected = [], []
    for _ in range(24):
        prompt = (
            f"<s><|im_start|>user\n{sentence(rng, rng.randint(2, 10))}<|im_end|>\n<|im_start|>assistant\n"
        )
        query = prompt + sentence(rng, rng.randint(2, 40)) + EOS
        bodies.append({"query": [query], "prompts": [prompt], "labels": [json.dumps({"datasource": "chat"})]})
        expected.append(ref.reward(openrlhf_text(query)))
    replies = asyncio.run(burst(stack.url, bodies))
    for reply, want in zip(replies, expected, strict=True):
        assert reply.ok and reply.data is not None
        assert reply.data["extra_logs"]["component/rm/ok"] == [1.0], reply.data
        assert abs(reply.data["rewards"][0] - want) < 1e-4, (reply.data, want)


def test_judge_in_its_container_asks_the_fake_upstream_container(stack: Stack) -> None:
    from tests.judge_proxy.fake_openai import directive

    bodies = []
    for i in range(16):
        ask = directive(prefer="GOOD", over="BAD")
        prompt = f"<|im_start|>user\nQ{i} {ask}<|im_end|>\n<|im_start|>assistant\n"
        label = json.dumps({"grader": "judge", "rubric": "pairwise", "baseline": f"BAD answer {i}"})
        bodies.append(openrlhf_body(prompt, f"GOOD answer {i}<|im_end|>", label))
    replies = asyncio.run(burst(stack.url, bodies))
    for reply in replies:
        assert reply.ok and reply.data is not None
        assert reply.data["rewards"] == [1.0] and reply.data["extra_logs"]["status/ok"] == [1.0], reply.data


def test_reward_model_without_a_checkpoint_fails_at_once_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no-checkpoint"
    env = {**os.environ, "RM_CHECKPOINT_DIR": str(missing), "GATEWAY_HTTP_PORT": str(free_port())}
    project = f"{PROJECT}-norm"
    command = [*compose_command(project), "up", "-d", "--no-build", "--no-deps", "reward_rm_cpu"]
    try:
        done = run(command, env, check=False, timeout=120)
        assert done.returncode != 0, "up with a missing checkpoint succeeded"
        assert "no-checkpoint" in done.stderr, done.stderr
        assert not missing.exists(), "docker created the checkpoint directory"
    finally:
        run([*compose_command(project), "down", "-v", "--remove-orphans"], env, check=False)
    assert leftovers(project) == []


def test_the_default_stack_needs_no_profile_key_or_checkpoint(tmp_path: Path) -> None:
    """No profile: redis, reward_rules and the gateway only; no judge key, no checkpoint, and the
    gateway does not wait for the services that are off."""
    port = free_port()
    project = f"{PROJECT}-default"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("RM_CHECKPOINT_DIR", "OPENAI_API_KEY")},
        "GATEWAY_HTTP_PORT": str(port),
        "GATEWAY_GRPC_PORT": str(free_port()),
        "REWARD_RULES_REPLICAS": "1",
    }
    base = ["docker", "compose"] if shutil.which("docker-compose") is None else ["docker-compose"]
    command = [*base, "-p", project, "-f", str(ROOT / "deploy/docker-compose.yml")]
    try:
        run([*command, "up", "-d", "--no-build", "--wait", "--wait-timeout", "300"], env)
        running = sorted(run([*command, "ps", "--services"], env).stdout.split())
        assert running == ["gateway", "redis", "reward_rules"], running
        prompt = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
        reply = asyncio.run(
            post_one(f"http://127.0.0.1:{port}/get_reward", openrlhf_body(prompt, "\\boxed{4}", "4"))
        )
        assert reply.ok and reply.data is not None and reply.data["scores"] == [1.0], reply
    finally:
        run([*command, "down", "-v", "--remove-orphans"], env, check=False)
    assert leftovers(project) == []
