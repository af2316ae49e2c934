"""The HTTP edge's cost per sample: every service's /get_reward as OpenRLHF calls it, beside a bare handler.

OpenRLHF POSTs one sample per request on a new connection (aiohttp, a session per attempt). This
bench starts, each in its own process and in the same run:
- bare:         uvicorn (httptools) with a raw ASGI handler that reads the body and returns a
                constant reward: the stack's limit on this machine;
- reward_rules: `python -m services.reward_rules`, samples labelled for the format grader;
- gateway:      `python -m services.gateway`, graders in process, the same samples;
- judge_proxy:  `python -m services.judge_proxy` against a fake chat-completions upstream
                (tests/judge_proxy/fake_openai.py, its own process) answering at once.
(reward_rm needs a checkpoint; its edge is the same kit code as the others'.)

Every sample is distinct, so caches never answer. For each server it prints samples/s, the
server process's CPU-ms per sample (from /proc, so the client's own cost does not count), and
two ratios against the bare handler: throughput (target >= 0.5x) and CPU per sample.

    python bench/bench_http.py [--requests 3000] [--clients 64] [--only gateway,reward_rules]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from testkit.openrlhf_client import post_all  # noqa: E402
from testkit.procs import ServiceProcess, free_port  # noqa: E402

CONSTANT = json.dumps({"rewards": [0.0], "scores": [0.0], "extra_logs": {}}).encode()
TICKS = os.sysconf("SC_CLK_TCK")


async def bare_app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """Reads the whole body (as any handler must), answers a constant reward."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(CONSTANT)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": CONSTANT})


def serve_bare(port: int) -> None:
    import uvicorn

    uvicorn.run(
        bare_app, host="127.0.0.1", port=port, http="httptools", access_log=False, log_level="warning"
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / TICKS


def bodies(count: int, offset: int) -> list[dict[str, Any]]:
    label = json.dumps({"grader": "format"})
    out = []
    for i in range(offset, offset + count):
        prompt = f"<|im_start|>user\nQuestion {i}: what is {i} + {i}?<|im_end|>\n<|im_start|>assistant\n"
        response = (
            f"<think>{i} plus {i} is {2 * i}. Wait, let me verify: yes.</think> \\boxed{{{2 * i}}}<|im_end|>"
        )
        out.append({"query": [prompt + response], "prompts": [prompt], "labels": [label]})
    return out


@contextmanager
def fake_upstream() -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.judge_proxy.fake_openai", "--latency", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"fake upstream did not start: {line!r}")
        yield int(line.split()[1])
    finally:
        proc.terminate()
        proc.wait(10)


def start(name: str, stack: ExitStack, workdir: Path) -> ServiceProcess:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARBITER_LOG__LEVEL": "WARNING"}
    if name == "bare":
        argv = [sys.executable, str(Path(__file__).resolve()), "--serve-bare", str(port)]
        return stack.enter_context(ServiceProcess(argv, f"http://127.0.0.1:{port}/", env=env))
    section = name.upper()
    env.update({f"ARBITER_{section}__HTTP_PORT": str(port), f"ARBITER_{section}__GRPC_PORT": "-1"})
    if name == "gateway":
        config = workdir / "gateway.yaml"
        config.write_text("reward_rules: {math: {workers: 1}}\n")
        env["ARBITER_CONFIG"] = str(config)
    if name == "judge_proxy":
        upstream = stack.enter_context(fake_upstream())
        config = workdir / "judge.yaml"
        config.write_text(
            "judge_proxy:\n  upstreams:\n"
            f"    - {{base_url: 'http://127.0.0.1:{upstream}/v1', model: fake, max_concurrency: 64}}\n"
        )
        env["ARBITER_CONFIG"] = str(config)
    argv = [sys.executable, "-m", f"services.{name}"]
    return stack.enter_context(ServiceProcess(argv, f"http://127.0.0.1:{port}/readyz", env=env))


async def measure(url: str, pid: int, count: int, clients: int, offset: int) -> tuple[float, float, int]:
    """(samples/s, server CPU-ms per sample, answers that were not 200 with one reward)."""
    await post_all(url, bodies(min(200, count), offset + 10_000_000), clients)  # warm-up
    cpu = cpu_seconds(pid)
    replies, elapsed = await post_all(url, bodies(count, offset), clients)
    used = cpu_seconds(pid) - cpu
    return count / elapsed, used * 1000 / count, sum(not r.ok for r in replies)


async def run(names: list[str], count: int, clients: int) -> None:
    print(
        f"{count} one-sample /get_reward POSTs per server, {clients} concurrent clients, new connection each"
    )
    print(f"{'server':<14}{'samples/s':>11}{'CPU-ms/sample':>15}{'throughput':>12}{'CPU ratio':>11}  bad")
    base: tuple[float, float] | None = None
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for index, name in enumerate(["bare", *names]):
            service = start(name, stack, Path(tmp))
            path = "/" if name == "bare" else "/get_reward"
            rate, cpu_ms, bad = await measure(
                f"{service.ready_url.rsplit('/', 1)[0]}{path}", service.pid, count, clients, index * count
            )
            if base is None:
                base = (rate, cpu_ms)
            print(
                f"{name:<14}{rate:>11.0f}{cpu_ms:>15.2f}{rate / base[0]:>11.2f}x"
                f"{base[1] / cpu_ms:>10.2f}x  {bad}"
            )
            service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--only", default="reward_rules,gateway,judge_proxy")
    parser.add_argument("--serve-bare", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    asyncio.run(run([n for n in args.only.split(",") if n], args.requests, args.clients))


if __name__ == "__main__":
    main()
