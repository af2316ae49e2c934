"""`arbiter check`: one probe sample through the endpoint a trainer will use, judged as it would be."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from arbiter.client import ArbiterClient, ArbiterClientError
from arbiter.contract import Sample


@dataclass
class ProbeReport:
    url: str
    ok: bool = False
    problem: str = ""
    latency_ms: float = 0.0
    reward: float | None = None
    score: float | None = None
    status: str = ""
    detail: str = ""
    grader: str = ""
    logs: dict[str, float] = field(default_factory=dict)

    def print(self, console: Console) -> None:
        verdict = "[green]OK[/green]" if self.ok else f"[red]FAILED[/red]: {self.problem}"
        console.print(f"{self.url}: {verdict}  ({self.latency_ms:.1f} ms)")
        if self.reward is not None:
            console.print(f"reward {self.reward:g}  score {self.score:g}  status {self.status or '-'}")
        if self.grader:
            console.print(f"grader {self.grader}")
        if self.detail:
            console.print(f"detail: {self.detail}")
        if self.logs:
            table = Table("extra_logs", "value", show_edge=False)
            for key, value in sorted(self.logs.items()):
                if value:
                    table.add_row(key, f"{value:g}")
            console.print(table)
            zeros = sum(1 for v in self.logs.values() if not v)
            console.print(f"({len(self.logs)} keys; {zeros} at 0 not shown)")


async def probe(url: str, prompt: str, response: str, label: str, timeout_s: float = 60.0) -> ProbeReport:
    report = ProbeReport(url=url)
    started = time.perf_counter()
    try:
        if url.startswith("grpc://"):
            await _probe_grpc(report, url.removeprefix("grpc://"), prompt, response, label, timeout_s)
        else:
            await _probe_http(report, url, prompt, response, label, timeout_s)
    except (httpx.HTTPError, ArbiterClientError, ValueError) as exc:
        report.problem = f"{type(exc).__name__}: {exc}"
    report.latency_ms = (time.perf_counter() - started) * 1000
    return report


async def _probe_http(
    report: ProbeReport, url: str, prompt: str, response: str, label: str, timeout_s: float
) -> None:
    if not url.rstrip("/").endswith("/get_reward"):
        url = url.rstrip("/") + "/get_reward"
        report.url = url
    body = {"query": [prompt + response], "prompts": [prompt], "labels": [label]}
    async with httpx.AsyncClient(timeout=timeout_s) as http:
        reply = await http.post(url, json=body)
    report.grader = reply.headers.get("x-arbiter-grader", "")
    if reply.status_code != 200:
        report.problem = f"HTTP {reply.status_code}: {reply.text[:300]} (OpenRLHF would retry, then crash)"
        return
    data: Any = reply.json()
    problem = _openrlhf_shape_problem(data)
    if problem:
        report.problem = problem
        return
    report.reward, report.score = data["rewards"][0], data["scores"][0]
    report.logs = {k: v[0] for k, v in data["extra_logs"].items()}
    flags = [
        k.removeprefix("status/").upper() for k, v in report.logs.items() if k.startswith("status/") and v
    ]
    report.status = flags[0] if flags else ""
    report.ok = report.status in ("", "OK")
    if not report.ok:
        report.problem = f"the sample was not graded: {report.status}"


def _openrlhf_shape_problem(data: Any) -> str:
    """What in a /get_reward answer would break OpenRLHF, or ''."""
    if not isinstance(data, dict):
        return "the answer is not a JSON object"
    for key in ("rewards", "scores"):
        values = data.get(key)
        if not isinstance(values, list) or len(values) != 1:
            return f"{key!r} is not a list of one number"
        if not isinstance(values[0], int | float) or not math.isfinite(values[0]):
            return f"{key!r} holds {values[0]!r}, not a finite number"
    extra = data.get("extra_logs", {})
    if not isinstance(extra, dict):
        return "'extra_logs' is not an object"
    for key, values in extra.items():
        if key in ("reward", "score", "kl"):
            return f"extra_logs key {key!r} collides with a trainer metric"
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], int | float):
            return f"extra_logs[{key!r}] is not a list of one number"
    return ""


async def _probe_grpc(
    report: ProbeReport, target: str, prompt: str, response: str, label: str, timeout_s: float
) -> None:
    async with ArbiterClient(grpc_target=target, timeout_s=timeout_s) as client:
        reply = await client.score([Sample(prompt=prompt, response=response, label=label)])
    result = reply.results[0]
    report.grader = f"{reply.grader.name}/{reply.grader.version}/{reply.grader.config_hash}"
    report.reward, report.score, report.status = result.reward, result.score, result.status.value
    report.detail, report.logs = result.detail, dict(result.logs)
    report.ok = result.status.value == "OK"
    if not report.ok:
        report.problem = f"the sample was not graded: {result.status.value}"
