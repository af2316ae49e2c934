"""python_tool episodes against the stateless way: the same multi-turn work, two ways.

Stateful (Arbiter's episodes): each episode starts, runs one code cell per tool turn in its own
persistent sandboxed interpreter (POST /v1/episodes/step), answers (graded by math), finishes.
Stateless (what a SandboxFusion-based tool does): each tool turn is one POST /run_code that runs
every earlier cell again, then the answer goes to POST /v1/score. Both against one reward_rules
service process (its own interpreter pool and its /run_code sandboxes), with the same cells, the
same concurrency and the same client.

Prints episodes/s and per-step latency (p50, p99: tool steps, then the final answer) for both and
their ratios, and the CPU time an episode cost (the service process, its sandboxes' cgroups, this
client): on a shared machine the CPU figures move less with other work than the rates do. Then
memory per open episode (`--open` episodes each holding a live interpreter: the service's whole
process tree RSS over its idle RSS, per episode; shared pages count in every process, so this is
an upper bound), and the service's RSS and open fds once they finished (the flat check: back to
about where they started).

    python bench/bench_episodes.py [--episodes 512] [--concurrency 256] [--turns 4] [--open 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit.procs import percentile
from testkit.rules_service import reward_rules_service

WORK = 20000  # loop steps of one cell (--cell-work): its CPU cost, which the stateless way pays again
KEPT_IDLE_S = 10.0  # python_tool.kept_sandbox_idle_s (its default): the flat check waits for it


def cell(turn: int) -> str:
    return f"v{turn} = sum(k * k for k in range({WORK})) + {turn}\nprint(v{turn})"


@cache  # computed once: the client's CPU competes with the service's on a small machine
def answer(tool_turns: int) -> int:
    return sum(sum(k * k for k in range(WORK)) + t for t in range(tool_turns)) % 1000


def tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:  # children of every thread: the sandbox pool launches from its own threads
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(p) for p in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def tree_rss_mib(pid: int) -> float:
    total = 0.0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_s(pid: int) -> tuple[float, float, float]:
    """CPU seconds so far: the service process (every thread), its sandboxes (their cpuacct
    groups, charged up to the service's base groups, which outlive each sandbox), this client."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    service = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    sandboxes = 0.0
    for base in Path("/sys/fs/cgroup/cpuacct").glob(f"arbiter-code-{pid}-*"):
        try:
            sandboxes += int((base / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            continue
    return service, sandboxes, time.process_time()


class Timings:
    def __init__(self) -> None:
        self.tool: list[float] = []
        self.first: list[float] = []  # the first tool step of a stateful episode: its interpreter starts
        self.final: list[float] = []
        self.failed = 0
        self.cpu_before: tuple[float, ...] = ()
        self.cpu_ms: tuple[float, ...] = ()  # per episode: service, sandboxes, client


async def stateful_episode(client: httpx.AsyncClient, name: str, turns: int, timings: Timings) -> None:
    tool_turns = turns - 1
    start = await client.post(
        "/v1/episodes/start",
        json={
            "episode_id": name,
            "environment": "python_tool",
            "prompt": "p",
            "label": str(answer(tool_turns)),
        },
    )
    if start.json()["status"] != "OK":
        timings.failed += 1
        return
    for turn in range(turns):
        action = f"```python\n{cell(turn)}\n```" if turn < tool_turns else f"\\boxed{{{answer(tool_turns)}}}"
        began = time.perf_counter()
        reply = (
            await client.post("/v1/episodes/step", json={"episode_id": name, "turn": turn, "action": action})
        ).json()
        (timings.tool if turn < tool_turns else timings.final).append(time.perf_counter() - began)
        if turn == 0:
            timings.first.append(timings.tool[-1])
        if reply["status"] != "OK" or (turn == tool_turns and reply["reward"] != 1.0):
            timings.failed += 1
    await client.post("/v1/episodes/finish", json={"episode_id": name})


async def stateless_episode(client: httpx.AsyncClient, name: str, turns: int, timings: Timings) -> None:
    tool_turns = turns - 1
    for turn in range(turns):
        began = time.perf_counter()
        if turn < tool_turns:
            code = "\n".join(cell(t) for t in range(turn + 1))  # every earlier cell again
            reply = await client.post(
                "/run_code", json={"code": code, "language": "python", "run_timeout": 10}
            )
            ok = reply.status_code == 200 and reply.json().get("status") == "Success"
            timings.tool.append(time.perf_counter() - began)
        else:
            sample = {
                "prompt": "p",
                "response": f"\\boxed{{{answer(tool_turns)}}}",
                "label": str(answer(tool_turns)),
            }
            reply = await client.post("/v1/score", json={"samples": [sample]})
            ok = reply.status_code == 200 and reply.json()["results"][0]["reward"] == 1.0
            timings.final.append(time.perf_counter() - began)
        timings.failed += not ok


async def run(way: str, url: str, episodes: int, concurrency: int, turns: int) -> tuple[float, Timings]:
    timings = Timings()
    timings.cpu_before = cpu_s(service_pid(url))
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        run_one = stateful_episode if way == "stateful" else stateless_episode

        async def one(n: int) -> None:
            async with gate:
                await run_one(client, f"{way}-{n}-{time.monotonic_ns()}", turns, timings)

        began = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(episodes)))
        rate = episodes / (time.perf_counter() - began)
    after = cpu_s(service_pid(url))
    timings.cpu_ms = tuple((b - a) * 1e3 / episodes for a, b in zip(timings.cpu_before, after, strict=True))
    return rate, timings


async def memory(url: str, pid: int, count: int) -> tuple[float, float, int, float, int]:
    """(idle RSS, RSS per open episode, fds while open, RSS after, fds after) of the service."""
    idle_rss, idle_fds = tree_rss_mib(pid), open_fds(pid)
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        gate = asyncio.Semaphore(64)

        async def open_one(n: int) -> None:
            async with gate:
                body = {"episode_id": f"mem-{n}", "environment": "python_tool", "prompt": "p", "label": "1"}
                await client.post("/v1/episodes/start", json=body)
                step = {"episode_id": f"mem-{n}", "turn": 0, "action": f"```python\n{cell(0)}\n```"}
                await client.post("/v1/episodes/step", json=step)

        await asyncio.gather(*(open_one(n) for n in range(count)))
        held_rss, held_fds = tree_rss_mib(pid), open_fds(pid)

        async def finish(n: int) -> None:
            async with gate:
                await client.post("/v1/episodes/finish", json={"episode_id": f"mem-{n}"})

        await asyncio.gather(*(finish(n) for n in range(count)))
    # the reaper thread kills and reaps the freed sandboxes; kept ones go once unused for
    # KEPT_IDLE_S, but the warm_interpreters most recently kept
    await asyncio.sleep(KEPT_IDLE_S + 3)
    print(
        f"  service idle: {idle_rss:.0f} MiB, {idle_fds} fds; "
        f"{count} open: {held_rss:.0f} MiB, {held_fds} fds"
    )
    return idle_rss, (held_rss - idle_rss) / count, held_fds, tree_rss_mib(pid), open_fds(pid)


def service_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"services.reward_rules" in cmd and f"ARBITER_REWARD_RULES__HTTP_PORT={port}".encode() in env:
            return int(entry.name)
    raise RuntimeError("service process not found")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--turns", type=int, default=4, help="tool turns + the final answer")
    parser.add_argument(
        "--open", type=int, default=256, help="episodes held open for the memory figure; 0: skip"
    )
    parser.add_argument("--cell-work", type=int, default=20000, help="loop steps per cell (its CPU cost)")
    parser.add_argument(
        "--no-reuse",
        action="store_true",
        help="a fresh sandbox per episode (python_tool.reuse_sandboxes false), for comparison",
    )
    args = parser.parse_args()
    global WORK
    WORK = args.cell_work
    config = {
        "episodes": {
            "max_live_interpreters": max(args.concurrency, args.open),
            "warm_interpreters": 8,
            "python_tool": {
                "memory_limit_mb": 256,
                "max_turns": args.turns,
                "reuse_sandboxes": not args.no_reuse,
                "kept_sandbox_idle_s": KEPT_IDLE_S,
            },
        },
        "reward_rules": {"code": {"memory_limit_mb": 256}},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        json.dump(config, handle)  # JSON is YAML
    settings = {"ARBITER_CONFIG": handle.name, "ARBITER_REWARD_RULES__MAX_SAMPLES_PER_REQUEST": "64"}
    with reward_rules_service(settings) as url:
        pid = service_pid(url)

        async def both() -> dict[str, tuple[float, Timings]]:
            await run("stateful", url, 8, 8, args.turns)  # warm both paths (math pool, sandboxes)
            await run("stateless", url, 8, 8, args.turns)
            results = {}
            for way in ("stateful", "stateless"):
                results[way] = await run(way, url, args.episodes, args.concurrency, args.turns)
                rate, timings = results[way]
                print(f"  {way} done: {rate:.2f} episodes/s, {timings.failed} failed", flush=True)
            return results

        results = asyncio.run(both())
        print(
            f"{args.episodes} episodes x {args.turns} turns ({args.turns - 1} tool + answer), "
            f"{args.concurrency} at once"
        )
        print(
            f"{'way':10} {'episodes/s':>10} {'tool p50 ms':>11} {'tool p99':>8} "
            f"{'final p50':>9} {'failed':>6}  CPU ms/episode: service, sandboxes, client"
        )
        for way, (rate, timings) in results.items():
            service, sandboxes, client = timings.cpu_ms
            print(
                f"{way:10} {rate:10.1f} {percentile(timings.tool, 0.5) * 1e3:11.0f} "
                f"{percentile(timings.tool, 0.99) * 1e3:8.0f} {percentile(timings.final, 0.5) * 1e3:9.0f} "
                f"{timings.failed:6d}  {service:.1f}, {sandboxes:.1f}, {client:.1f}"
            )
        (s_rate, s_t), (l_rate, l_t) = results["stateful"], results["stateless"]
        print(
            f"stateful / stateless: episodes/s x{s_rate / l_rate:.2f}; tool step p50 x"
            f"{statistics.median(s_t.tool) / statistics.median(l_t.tool):.2f}, p99 x"
            f"{percentile(s_t.tool, 0.99) / percentile(l_t.tool, 0.99):.2f} (latency: lower is better)"
        )
        first = s_t.first
        print(
            f"stateful first tool step (its interpreter starts): p50 {percentile(first, 0.5) * 1e3:.0f} ms, "
            f"p99 {percentile(first, 0.99) * 1e3:.0f} ms"
        )
        if args.open > 0:
            idle, per_episode, _, after_rss, after_fds = asyncio.run(memory(url, pid, args.open))
            print(
                f"memory per open episode (live interpreter): {per_episode:.1f} MiB (tree RSS, upper bound)"
            )
            print(f"after finishing them: {after_rss:.0f} MiB (idle {idle:.0f}), {after_fds} fds")
    os.unlink(handle.name)


if __name__ == "__main__":
    main()
