"""The code-test grader: extracts the program, runs its tests sandboxed, scores the pass fraction.

reward = 1 when every test passes, else 0 (or the pass fraction, `reward: fraction`);
score = pass fraction. Cheap to construct: the sandbox pool and worker threads start on the
first batch; `aclose()` kills every sandbox and removes its cgroups.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.reward_rules.code.backends.base import SandboxSource
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.reuse import ReusedSandboxes
from services.reward_rules.code.backends.bwrap.sandbox import Limits
from services.reward_rules.code.backends.factory import check_backend, start_backend
from services.reward_rules.code.checker import CheckerSetup
from services.reward_rules.code.config import CodeConfig
from services.reward_rules.code.extract import extract_program
from services.reward_rules.code.labelcode import LabelCodeError
from services.reward_rules.code.labelrun import LabelError, LabelRunPool
from services.reward_rules.code.languages import NAMES, TOOLCHAINS, sandbox_paths, toolchain
from services.reward_rules.code.native import COMPILE, CompileCache, NativeBuild
from services.reward_rules.code.pch import PrecompiledHeaders
from services.reward_rules.code.runner import PythonRunner
from services.reward_rules.code.session import (
    CRASH,
    MEMORY,
    OUTPUT,
    TIMEOUT,
    WRONG,
    InfrastructureError,
    Session,
    TimeRule,
)
from services.reward_rules.code.testrun import (
    Budget,
    Report,
    checker_names,
    label_names,
    run_tests,
    with_prompt_helpers,
)
from services.reward_rules.code.tests_spec import AssertTests, CheckTests, CodeLabel, StdioTests
from services.scoring.grader import GraderBase, config_hash

VERSION = "2.0.0"  # 2: label code in a label sandbox, helpers from the label, exact numbers
log = logging.getLogger(__name__)
T = TypeVar("T")

LOG_KEYS = (
    "code/passed",
    "code/total",
    "code/all_passed",
    "code/wrong",
    "code/timeouts",
    "code/memory_kills",
    "code/crashes",
    "code/output_limits",
    "code/no_program",
    "code/compile_error",
    "code/run_ms",
)
SERVED = ", ".join(NAMES)  # the languages (languages.py), as errors name them
LANGUAGES = {alias: chain.name for chain in TOOLCHAINS for alias in chain.aliases}  # alias -> name


class CodeGrader(GraderBase):
    _log_keys = LOG_KEYS

    def __init__(self, config: CodeConfig | None = None) -> None:
        self.config = config or CodeConfig()
        self.runner = PythonRunner(self.config.python, self.config.python_site)
        check_backend(self.config, log)
        self._info = GraderInfo(
            name="code",
            version=VERSION,
            config_hash=config_hash(self.config),
            capabilities=[
                "code",
                *NAMES,
                "stdio",
                "assert",
                "check",
                "call",
                "checkers",
                "checker_programs",
            ],
        )
        self.workers = self.config.workers or (os.cpu_count() or 2) + 2
        self._source: SandboxSource | None = None
        self._pool: SandboxPool | None = None
        self._label_runs: LabelRunPool | None = None  # where label code runs: local even with SandboxFusion
        self._stdio: ReusedSandboxes | None = None  # stdio-only sandboxes, reused once proven clean
        self._executor: ThreadPoolExecutor | None = None
        self._start_lock = threading.Lock()
        self._parse = functools.lru_cache(maxsize=4096)(self._parse_label)
        self._compile_cache = CompileCache(self.config.compile_cache_mb << 20, os.cpu_count() or 2)
        self._pch = PrecompiledHeaders(
            self.config.cxx, self.config.cxx_flags, Path(self.config.pch_dir) if self.config.pch_dir else None
        )

    def _limits(self) -> Limits:
        output = self.config.max_output_bytes
        return Limits(
            memory_bytes=self.config.memory_limit_mb << 20,
            max_pids=self.config.max_pids,
            tmpfs_bytes=self.config.tmpfs_mb << 20,
            max_frame_bytes=output * 2 + (16 << 20),
            cpu_limit=self.config.cpu_limit,
            ro_paths=self._ro_paths(),
        )

    def _ro_paths(self) -> tuple[str, ...]:
        """Host directories the sandboxes bind read-only: toolchains' files outside /usr (the JDK's
        configuration) and the precompiled C++ headers (pch.py)."""
        pch = self._pch.usable_root() if self.config.cxx_pch else None
        return sandbox_paths() + ((str(pch),) if pch is not None else ())

    def native_build(self, language: str, time_limit_s: float | None = None) -> NativeBuild:
        """How a program of `language` (a compiled or interpreted one: languages.py) is built here;
        C++ with the configured compiler and flags, and the precompiled headers once built."""
        limit = self.config.compile_time_limit_s if time_limit_s is None else time_limit_s
        argv = [self.config.cxx, *self.config.cxx_flags]
        if self.config.cxx_pch:
            argv += self._pch.include_flags()
        memory, binary = self.config.compile_memory_mb << 20, self.config.max_binary_mb << 20
        return NativeBuild(self._compile_cache, argv, limit, binary, memory, language)

    async def start(self) -> None:
        """Starts the sandbox pool and worker threads before serving (else the first score() does)."""
        await asyncio.to_thread(self._ensure_started)

    def _ensure_started(self) -> None:
        with self._start_lock:
            self._start_locked()

    def _start_locked(self) -> None:
        if self._executor is not None:
            return
        backend = start_backend(self.config, self.runner, self._limits(), self.workers)
        if self.config.cxx_pch and self.config.backend == "local":
            self._pch.start()  # in the background: compiles go without it until it is built
        self._source, self._pool, self._label_runs, self._stdio = (
            backend.source,
            backend.pool,
            backend.label_runs,
            backend.stdio,
        )
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="code-grader")

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        if self._executor is None:
            await asyncio.to_thread(self._ensure_started)
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self._executor, self.grade, sample) for sample in samples]
        return list(await asyncio.gather(*futures))

    def time_rule(self) -> TimeRule:
        """CPU-time limits (with a longer wall-clock one) where the local sandboxes count their CPU
        time (a cpuacct cgroup); wall-clock limits elsewhere (SandboxFusion, no cgroups)."""
        pool = self._pool
        cpu = pool is not None and pool.cpu_timed and self.config.backend == "local"
        return TimeRule(cpu, self.config.wall_factor, self.config.wall_extra_s)

    # ------------------------------------------------------------------ raw runs (run_code.py)

    @property
    def compile_cache(self) -> CompileCache:
        return self._compile_cache

    def sandbox_source(self) -> SandboxSource:
        """Where single stdio programs run (reused clean sandboxes, else the pool; started if need be)."""
        if self._source is None:
            self._ensure_started()
        assert self._source is not None
        return self._stdio if self._stdio is not None else self._source

    def has_local_sandboxes(self) -> bool:
        return self.config.backend == "local"

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the grader's worker threads (what bounds its concurrent runs)."""
        if self._executor is None:
            await asyncio.to_thread(self._ensure_started)
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def aclose(self) -> None:
        executor, source, label_runs, stdio = self._executor, self._source, self._label_runs, self._stdio
        self._executor = self._pool = self._source = self._label_runs = self._stdio = None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if stdio is not None:
            stdio.close()  # idle ones go back to the pool, which kills them
        if label_runs is not None:
            label_runs.close()  # idle label sandboxes go back to their sandbox pool, which kills them
            if label_runs.sandboxes is not source:
                await asyncio.to_thread(label_runs.sandboxes.close)
        if source is not None:
            await asyncio.to_thread(source.close)

    # ------------------------------------------------------------------ one sample

    def _parse_label(self, label: str) -> CodeLabel | str:
        try:
            return CodeLabel.model_validate_json(label)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            return f"bad code label: {problems}"

    def _result(self, status: Status, detail: str, **logs: float) -> Result:
        values = dict.fromkeys(LOG_KEYS, 0.0)
        values.update({f"code/{key}": value for key, value in logs.items()})
        return Result(reward=0.0, score=0.0, status=status, detail=detail, logs=values)

    def grade(self, sample: Sample) -> Result:
        """Scores one sample (blocking: runs in a worker thread)."""
        label = self._parse(sample.label)
        if isinstance(label, str):
            return self._result(Status.INVALID_INPUT, label)
        chain = toolchain(label.language)
        if chain is None:
            return self._result(
                Status.INVALID_INPUT, f"language {label.language!r} is not supported ({SERVED})"
            )
        language = chain.name
        if not chain.function_tests and not isinstance(label.tests, StdioTests):
            return self._result(Status.INVALID_INPUT, f"{language} labels take stdio tests")
        total = label.test_count()
        try:
            if isinstance(label.tests, AssertTests | CheckTests):
                try:
                    label_names(label.tests)
                except LabelCodeError:
                    completed = with_prompt_helpers(label.tests, sample.prompt)
                    if completed is None:
                        raise
                    label = label.model_copy(update={"tests": completed})
                    label_names(completed)
            elif isinstance(label.tests, StdioTests) and label.tests.checker == "custom":
                checker_names(label.tests)
        except LabelCodeError as exc:
            return self._result(Status.INVALID_INPUT, f"bad code label: {exc}")
        program = extract_program(sample.response, language)
        if not program:
            return self._result(Status.OK, "no program in the response", total=total, no_program=1.0)
        if self._source is None:
            self._ensure_started()
        assert self._source is not None
        started = time.monotonic()
        time_limit = min(label.time_limit_s or self.config.time_limit_s, self.config.max_time_limit_s)
        memory_mb = min(label.memory_limit_mb or self.config.memory_limit_mb, self.config.max_memory_limit_mb)
        budget = Budget(
            time_limit_s=time_limit,
            max_output_bytes=self.config.max_output_bytes,
            sample_deadline=started + self.config.sample_budget_s,
            tolerance=self.config.float_tolerance,
            max_value_bytes=self.config.max_value_bytes,
            max_timeouts=self.config.max_timeouts,
            time_rule=self.time_rule(),
        )
        module = "__main__" if isinstance(label.tests, StdioTests) else "__solution__"
        prelude = label.tests.helpers if isinstance(label.tests, AssertTests | CheckTests) else ""
        source = self._stdio if self._stdio is not None else self._source  # a fresh fork per sample
        session = Session(
            source, program, memory_mb << 20, self.config.max_restarts, module, prelude, budget.time_rule
        )
        build = natives = None
        needs_cxx = isinstance(label.tests, StdioTests) and label.tests.checker == "testlib"
        if needs_cxx or not chain.in_harness:
            if self._pool is None:
                what = "C++ checkers" if chain.in_harness else language
                detail = f"{what} need the local sandbox backend"
                return self._result(Status.GRADER_ERROR, detail, total=total)
            cxx = self.native_build("cpp")
            build = None if chain.in_harness else cxx if language == "cpp" else self.native_build(language)
            checkers = self._stdio if self._stdio is not None else self._pool
            natives = CheckerSetup(
                checkers, cxx, self.config.max_restarts, self.config.testlib_header, budget.time_rule
            )
        try:
            report = run_tests(session, label, budget, self._label_runs, build, natives)
        except InfrastructureError as exc:
            log.error("code grader: %s", exc)
            return self._result(Status.GRADER_ERROR, str(exc)[:500], total=total)
        except LabelError as exc:
            return self._result(Status.INVALID_INPUT, f"bad code label: {exc}"[:500], total=total)
        finally:
            session.close()
        return self._scored(report, total, (time.monotonic() - started) * 1000)

    def _scored(self, report: Report, total: int, run_ms: float) -> Result:
        passed = report.passed
        fraction = passed / total if total else 0.0
        all_passed = passed == total and total > 0
        first = report.first_failure()
        detail = f"passed {passed}/{total}" + (f"; first failure: {first.describe()}" if first else "")
        reward = float(all_passed) if self.config.reward == "all" else fraction
        logs = dict.fromkeys(LOG_KEYS, 0.0)
        logs.update(
            {
                "code/passed": float(passed),
                "code/total": float(total),
                "code/all_passed": float(all_passed),
                "code/wrong": float(report.count(WRONG)),
                "code/timeouts": float(report.count(TIMEOUT)),
                "code/memory_kills": float(report.count(MEMORY)),
                "code/crashes": float(report.count(CRASH)),
                "code/output_limits": float(report.count(OUTPUT)),
                "code/compile_error": float(report.count(COMPILE) > 0),
                "code/run_ms": run_ms,
            }
        )
        return Result(reward=reward, score=fraction, status=Status.OK, detail=detail[:1000], logs=logs)
