"""The HTTP edge's cost per sample: every service's /get_reward as OpenRLHF calls it, beside a bare handler.

OpenRLHF POSTs one sample per request on a new connection (aiohttp, a session per attempt). This
bench starts, each in its own process and in the same run:
- bare:         uvicorn (httptools) with a raw ASGI handler that reads the body and returns a
                constant reward: the stack's limit on this machine;
- reward_rules: `python -m services.reward_rules`, samples labelled for the format grader;
- gateway:      `python -m services.gateway`, graders in process, the same samples;
- judge_proxy:  `python -m services.judge_proxy` against a fake chat-completions upstream
                (tests/judge_proxy/fake_openai.py, its own process) answering at once; every
                sample makes a real judge call (its default rubric), and a sample that came back
                a fallback or INVALID_INPUT counts as "not graded".
(reward_rm needs a checkpoint; its edge is the same kit code as the others'.)

Every sample is distinct, so caches never answer. The servers run side by side and take turns,
`--rounds` (3) times, so a slow spell of the machine falls on all of them; each figure is the
median over the rounds. For each server it prints samples/s, the server's CPU-ms per sample (its
whole process tree, from /proc, so the client's own cost does not count), two ratios against the
bare handler (throughput, target >= 0.5x, taken per round; and CPU per sample), and what the
machine spent beside it per sample: this client's CPU (OpenRLHF's, on the trainer's machine in
a real run) and the fake upstream's (the LLM server's, elsewhere in a real run). On 2 cores all
three share the CPUs, so their costs bound the judge's throughput as much as its own does.
`--workers 1,2` (the default) runs the table with every server (the bare one too) as 1, then as
2 processes on one port (`workers: N`, SO_REUSEPORT).

Then the judge against its ideal: the fake upstream answers after `--judge-latency-ms` (50), the
service's cap on upstream calls is 64, so no judge can beat 64 / 0.05 s = 1,280 samples/s; it
prints the judge's share of that (target >= 0.8x on an idle 2-core machine), for each worker
count. The bench's client and fake upstream share the machine's cores with the judge (their CPU
per sample is what the judge's would have to fit beside). `--judge-latency-ms 0` skips it.

    python bench/bench_http.py [--requests 3000] [--rounds 3] [--clients 64] [--only gateway,reward_rules]
                               [--workers 1,2] [--judge-latency-ms 50] [--judge-clients 192]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from services.common.lifeline import die_with_parent  # noqa: E402
from testkit.openrlhf_client import Reply, post_all  # noqa: E402
from testkit.procs import ServiceProcess, children, free_port  # noqa: E402

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


def serve_bare(port: int, workers: int) -> None:
    """The bare handler on uvicorn, in `workers` processes on one port (SO_REUSEPORT), as the
    services run with `workers: N`."""
    import socket

    import uvicorn

    parent = os.getpid()
    for _ in range(workers - 1):
        if os.fork() == 0:
            die_with_parent(parent)  # stopped with the first (the bench stops that one)
            break
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(bare_app, http="httptools", access_log=False, log_level="warning", backlog=4096)
    uvicorn.Server(config).run(sockets=[sock])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its live descendants and their reaped children, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / TICKS + sum(cpu_seconds(c) for c in children(pid))


LABELS = {"judge_proxy": json.dumps({"grader": "judge"})}  # the judge's default rubric
FORMAT = json.dumps({"grader": "format"})  # reward_rules, gateway (its default route), bare


def bodies(count: int, offset: int, label: str = FORMAT) -> list[dict[str, Any]]:
    out = []
    for i in range(offset, offset + count):
        prompt = f"<|im_start|>user\nQuestion {i}: what is {i} + {i}?<|im_end|>\n<|im_start|>assistant\n"
        response = (
            f"<think>{i} plus {i} is {2 * i}. Wait, let me verify: yes.</think> \\boxed{{{2 * i}}}<|im_end|>"
        )
        out.append({"query": [prompt + response], "prompts": [prompt], "labels": [label]})
    return out


@contextmanager
def fake_upstream(latency_s: float) -> Iterator[tuple[int, int]]:
    """The fake chat-completions server in its own process: (port, pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.judge_proxy.fake_openai", "--latency", str(latency_s)],
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
        yield int(line.split()[1]), proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


UPSTREAM_CAP = 64  # the judge's max_concurrency (all workers together): its ideal is UPSTREAM_CAP / latency


def start(
    name: str, stack: ExitStack, workdir: Path, workers: int, judge_latency_s: float = 0.0
) -> tuple[ServiceProcess, int]:
    """The server, and the pid of its fake upstream (0 for none)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARBITER_LOG__LEVEL": "WARNING"}
    env["ARBITER_WORKERS"] = str(workers)
    if name == "bare":
        argv = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--serve-bare",
            str(port),
            "--workers",
            str(workers),
        ]
        return stack.enter_context(ServiceProcess(argv, f"http://127.0.0.1:{port}/", env=env)), 0
    section = name.upper()
    env.update({f"ARBITER_{section}__HTTP_PORT": str(port), f"ARBITER_{section}__GRPC_PORT": "-1"})
    if name == "gateway":
        config = workdir / "gateway.yaml"
        config.write_text("reward_rules: {math: {workers: 1}}\n")
        env["ARBITER_CONFIG"] = str(config)
    upstream_pid = 0
    if name == "judge_proxy":
        upstream, upstream_pid = stack.enter_context(fake_upstream(judge_latency_s))
        config = workdir / "judge.yaml"
        config.write_text(
            "judge_proxy:\n  upstreams:\n    - {base_url: 'http://127.0.0.1:"
            f"{upstream}/v1', model: fake, max_concurrency: {UPSTREAM_CAP}}}\n"
        )
        env["ARBITER_CONFIG"] = str(config)
    argv = [sys.executable, "-m", f"services.{name}"]
    return stack.enter_context(ServiceProcess(argv, f"http://127.0.0.1:{port}/readyz", env=env)), upstream_pid


def graded(reply: Reply) -> bool:
    """A 200 with one reward that its grader gave (no status/... flag: not a fallback, not invalid)."""
    logs = (reply.data or {}).get("extra_logs") or {}
    flags = [v for k, v in logs.items() if k.startswith("status/") and k != "status/ok"]
    return reply.ok and logs.get("status/ok") == [1.0] and not any(v != [0.0] for v in flags)


@dataclass(frozen=True)
class Measured:
    rate: float  # samples/s
    cpu_ms: float  # the server's CPU-ms per sample (its process tree)
    bad: int  # answers not graded: failures, fallbacks, invalid
    client_ms: float  # this client's own CPU-ms per sample
    upstream_ms: float  # the fake upstream's CPU-ms per sample (0 without one)


async def measure(
    url: str, pid: int, count: int, clients: int, offset: int, label: str = FORMAT, upstream: int = 0
) -> Measured:
    await post_all(url, bodies(min(200, count), offset + 10_000_000, label), clients)  # warm-up
    work = bodies(count, offset, label)
    cpu, up, me = cpu_seconds(pid), cpu_seconds(upstream) if upstream else 0.0, _own_cpu()
    replies, elapsed = await post_all(url, work, clients)
    used, client = cpu_seconds(pid) - cpu, _own_cpu() - me
    up_used = cpu_seconds(upstream) - up if upstream else 0.0
    bad = sum(not graded(r) for r in replies)
    per = 1000 / count
    return Measured(count / elapsed, used * per, bad, client * per, up_used * per)


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run(names: list[str], count: int, clients: int, workers: int, rounds: int) -> None:
    print(
        f"{count} one-sample /get_reward POSTs per server and round, {clients} concurrent clients, new "
        f"connection each; {workers} worker process(es) per server; median of {rounds} round(s)"
    )
    print(
        f"{'server':<14}{'samples/s':>11}{'CPU-ms/sample':>15}{'throughput':>12}{'CPU ratio':>11}"
        f"{'client CPU-ms':>15}{'upstream CPU-ms':>17}  not graded"
    )
    every = ["bare", *names]
    seen: dict[str, list[Measured]] = {name: [] for name in every}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        served = {name: start(name, stack, Path(tmp), workers) for name in every}
        for round_no in range(rounds):  # servers take turns: a slow spell of the machine hits all
            for index, name in enumerate(every):
                service, upstream = served[name]
                path = "/" if name == "bare" else "/get_reward"
                url = f"{service.ready_url.rsplit('/', 1)[0]}{path}"
                offset = (round_no * len(every) + index) * count
                label = LABELS.get(name, FORMAT)
                seen[name].append(await measure(url, service.pid, count, clients, offset, label, upstream))
    base = seen["bare"]
    for name in every:
        runs = seen[name]
        ratios = [m.rate / b.rate for m, b in zip(runs, base, strict=True)]
        cpu = median(m.cpu_ms for m in runs)
        bad = sum(m.bad for m in runs)
        print(
            f"{name:<14}{median(m.rate for m in runs):>11.0f}{cpu:>15.2f}{median(ratios):>11.2f}x"
            f"{median(b.cpu_ms for b in base) / cpu:>10.2f}x{median(m.client_ms for m in runs):>15.2f}"
            f"{median(m.upstream_ms for m in runs):>17.2f}  {'-' if name == 'bare' else bad}"
        )


async def run_judge_ideal(count: int, clients: int, workers: int, latency_s: float) -> None:
    ideal = UPSTREAM_CAP / latency_s
    print(
        f"judge_proxy vs its ideal: upstream answers after {latency_s * 1000:.0f} ms, cap {UPSTREAM_CAP} "
        f"in flight -> ideal {ideal:.0f} samples/s; {count} POSTs, {clients} clients, {workers} worker(s)"
    )
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        service, upstream = start("judge_proxy", stack, Path(tmp), workers, latency_s)
        url = f"{service.ready_url.rsplit('/', 1)[0]}/get_reward"
        m = await measure(url, service.pid, count, clients, 50 * count, LABELS["judge_proxy"], upstream)
        print(
            f"judge_proxy {m.rate:>8.0f} samples/s {m.cpu_ms:6.2f} CPU-ms/sample {m.rate / ideal:6.2f}x ideal"
        )
        print(f"not graded: {m.bad}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="each server measured this many times, in turns"
    )
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--only", default="reward_rules,gateway,judge_proxy")
    parser.add_argument(
        "--workers", default="1,2", help="processes per server, on one port; a list runs each"
    )
    parser.add_argument("--judge-latency-ms", type=float, default=50.0, help="0 skips the judge-vs-ideal run")
    parser.add_argument("--judge-clients", type=int, default=192, help="more than the cap keeps it full")
    parser.add_argument("--serve-bare", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare, int(args.workers))
        return
    names = [n for n in args.only.split(",") if n]
    counts = [int(w) for w in args.workers.split(",")]
    for workers in counts:
        if names:
            asyncio.run(run(names, args.requests, args.clients, workers, args.rounds))
            print()
    for workers in counts if args.judge_latency_ms > 0 else []:
        latency = args.judge_latency_ms / 1000
        asyncio.run(run_judge_ideal(args.requests, args.judge_clients, workers, latency))


if __name__ == "__main__":
    main()
