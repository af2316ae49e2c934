"""SandboxFusion-compatible `/run_code` as veRL calls it: veRL's own client, 128 concurrent calls,
against the same programs run bare (a subprocess each, no sandbox), same machine, same run.

    .venv-verl/bin/python bench/bench_sandbox_api.py [--calls 512] [--concurrency 128]

Starts `python -m services.reward_rules` on loopback (its default code grader: bwrap, seccomp,
cgroups, workers = CPU count + 2), then runs `--calls` stdio programs through veRL's
`call_sandbox_api` (a thread each, `--concurrency` at once, as veRL's reward path does with its
semaphore of 64 to 128), alternating `--languages` (C++ programs compiled once each by a warm-up
call: the compile cache), and the same programs bare with the same concurrency (Python: the
same interpreter; C++: the same g++ flags, compiled once before timing). Prints calls/s of each and
the ratio. Python runs served are forks of the sandbox's warm interpreter (no interpreter start),
bare ones start `python3` each: that half is faster served than bare. With .venv's python (no veRL)
it posts the same body with `requests` instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from testkit.rules_service import reward_rules_service  # noqa: E402

PY = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a * {k} + b)\n"
CPP = (
    '#include <cstdio>\nint main(){{long a,b;if(scanf("%ld %ld",&a,&b)!=2)return 1;'
    'printf("%ld\\n",a*{k}+b);}}\n'
)
VARIANTS = 8  # distinct programs per language (a GRPO group repeats programs)


def verl_client() -> tuple[Callable[..., tuple[Any, Any]], str]:
    try:
        from verl.utils.reward_score.sandbox_fusion.utils import call_sandbox_api
    except ImportError:

        def call_sandbox_api(
            url: str,
            code: str,
            stdin: str,
            compile_timeout: int,
            run_timeout: int,
            memory_mb: int,
            language: str,
        ) -> tuple[Any, Any]:
            body: dict[str, Any] = {
                "compile_timeout": compile_timeout,
                "run_timeout": run_timeout,
                "code": code,
                "stdin": stdin,
                "memory_limit_MB": memory_mb,
                "language": language,
                "files": {},
                "fetch_files": [],
            }
            for attempt in range(3):  # as veRL's client: a 504 (a full /run_code queue) is retried
                response = requests.post(url, json=body, timeout=compile_timeout + run_timeout + 10)
                if response.status_code != 504:
                    break
                time.sleep(1.0 + attempt)
            response.raise_for_status()
            return response.json(), None

        return call_sandbox_api, "requests (no veRL here)"
    return call_sandbox_api, "veRL 0.9.1 call_sandbox_api"


def workload(calls: int, languages: list[str]) -> list[tuple[str, str, str, str]]:
    """(language, code, stdin, expected stdout)."""
    work = []
    for i in range(calls):
        k = i % VARIANTS
        language = languages[i % len(languages)]
        code = (PY if language == "python" else CPP).format(k=k)
        work.append((language, code, f"{i} 7\n", f"{i * k + 7}\n"))
    return work


def run_served(url: str, work: list[tuple[str, str, str, str]], concurrency: int) -> tuple[float, int]:
    call, _ = verl_client()

    def one(item: tuple[str, str, str, str]) -> bool:
        language, code, stdin, expected = item
        response, error = call(url, code, stdin, 10, 10, 512, language)
        return (
            error is None and response["status"] == "Success" and response["run_result"]["stdout"] == expected
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        ok = sum(pool.map(one, work))
    return time.perf_counter() - started, ok


def run_bare(work: list[tuple[str, str, str, str]], concurrency: int, directory: str) -> tuple[float, int]:
    binaries: dict[str, str] = {}
    for language, code, _, _ in work:
        if language == "cpp" and code not in binaries:
            source = Path(directory, f"p{len(binaries)}.cpp")
            source.write_text(code)
            binary = str(source.with_suffix(""))
            subprocess.run(["g++", "-std=c++17", "-O2", "-o", binary, str(source)], check=True)
            binaries[code] = binary

    def one(item: tuple[str, str, str, str]) -> bool:
        language, code, stdin, expected = item
        argv = ["/usr/bin/python3", "-c", code] if language == "python" else [binaries[code]]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=10)
        return done.returncode == 0 and done.stdout == expected

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        ok = sum(pool.map(one, work))
    return time.perf_counter() - started, ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--languages", default="python,cpp", help="comma-separated: python, cpp")
    args = parser.parse_args()
    _, client = verl_client()
    languages = args.languages.split(",")
    work = workload(args.calls, languages)
    with reward_rules_service() as base, tempfile.TemporaryDirectory() as directory:
        url = f"{base}/run_code"
        run_served(
            url, workload(2 * VARIANTS, ["python", "cpp"]), 2 * VARIANTS
        )  # warm-up: every C++ program compiled once
        served_s, served_ok = run_served(url, work, args.concurrency)
        bare_s, bare_ok = run_bare(work, args.concurrency, directory)
    n, cpus = args.calls, os.cpu_count()
    shape = f"{n} calls ({'/'.join(languages)} alternating), {args.concurrency} at once"
    print(f"client: {client}; {shape}, {cpus} CPUs")
    print(f"served /run_code: {served_s:6.2f} s  {n / served_s:7.1f} calls/s  correct {served_ok}/{n}")
    print(f"bare subprocess:  {bare_s:6.2f} s  {n / bare_s:7.1f} calls/s  correct {bare_ok}/{n}")
    print(f"ratio served/bare: {bare_s / served_s:.2f}x")


if __name__ == "__main__":
    main()
