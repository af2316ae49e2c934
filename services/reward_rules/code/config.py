"""Options of the code grader (section `reward_rules.code` of the Arbiter settings)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sandbox: Literal["bwrap", "unsafe"] = Field(
        default="bwrap",
        description="bwrap: every run in a fresh bubblewrap sandbox; unsafe: no isolation at all "
        "(runs as a plain subprocess; only for machines without bubblewrap, loudly logged)",
    )
    backend: Literal["local", "sandboxfusion"] = Field(
        default="local", description="sandboxfusion: send runs to an existing SandboxFusion server"
    )
    sandboxfusion_url: str = Field(default="", description="base URL of the SandboxFusion server")
    reward: Literal["all", "fraction"] = Field(
        default="all", description="all: 1 when every test passes, else 0; fraction: the pass fraction"
    )
    workers: int = Field(default=0, ge=0, description="samples run at once; 0 means CPU count + 2")
    warm_sandboxes: int = Field(default=0, ge=0, description="pre-started sandboxes; 0 means 2 x workers")
    time_limit_s: float = Field(default=5.0, gt=0, description="per test (a whole check() is one test)")
    max_time_limit_s: float = Field(default=30.0, gt=0, description="cap on a label's time_limit_s")
    cpu_limit: float = Field(
        default=1.0,
        ge=0,
        description="CPUs each sandbox may use at once (a cgroup v1 CFS quota; 0: no quota), so one "
        "sample's threads or processes cannot slow the others",
    )
    wall_factor: float = Field(
        default=3.0,
        ge=1,
        description="where sandboxes have a cpuacct cgroup, time_limit_s is CPU time (the whole "
        "sandbox's) and a test's wall-clock limit is wall_factor x time_limit_s + wall_extra_s "
        "(a sleeping or blocked program); elsewhere time_limit_s is wall-clock",
    )
    wall_extra_s: float = Field(default=1.0, ge=0, description="see wall_factor")
    memory_limit_mb: int = Field(default=512, ge=32, description="per sandbox, candidate and harness")
    max_memory_limit_mb: int = Field(default=4096, ge=32, description="cap on a label's memory_limit_mb")
    sample_budget_s: float = Field(
        default=20.0, gt=0, description="wall time for all of a sample's tests, loading included"
    )
    max_pids: int = Field(default=64, ge=8, description="processes and threads per sandbox")
    tmpfs_mb: int = Field(default=64, ge=1, description="size of the sandbox's writable /tmp")
    max_output_bytes: int = Field(default=8 << 20, ge=1024, description="stdout kept per stdio test")
    max_restarts: int = Field(default=2, ge=0, description="fresh sandboxes after a crash or timeout")
    max_timeouts: int = Field(
        default=2,
        ge=1,
        description="after this many timed-out tests a sample's other tests are not run (count as "
        "timeouts), so a slow program does not hold a worker for the whole sample budget",
    )
    float_tolerance: float = Field(
        default=0.0,
        ge=0,
        description="number tolerance for labels that set none (stdio tokens, call values); 0: exact",
    )
    max_value_bytes: int = Field(
        default=4 << 20,
        ge=1024,
        description="largest encoded value a function test's call may return (assert/check tests); "
        "call tests allow what their expected value can need",
    )
    seccomp: bool = Field(
        default=True,
        description="seccomp filter in the sandbox (io_uring, keyctl, bpf, perf_event_open, ptrace... "
        "answer EPERM); needs libseccomp (pyseccomp), else a warning and no filter",
    )
    reuse_sandboxes: bool = Field(
        default=True,
        description="a sandbox that served only stdio runs (C++, Python scripts, /run_code) serves "
        "later samples once proven clean (reuse.py); false: a fresh sandbox per sample",
    )
    python: str = Field(default="/usr/bin/python3", description="interpreter inside the sandbox")
    cxx: str = Field(default="/usr/bin/g++", description="C++ compiler, run inside the sample's sandbox")
    cxx_flags: list[str] = Field(default_factory=lambda: ["-std=c++17", "-O2"])
    cxx_pch: bool = Field(
        default=True,
        description="precompile <bits/stdc++.h> once per host for cxx_flags (pch.py, in pch_dir) "
        "and let C++ compiles load it",
    )
    pch_dir: str = Field(
        default="",
        description="where precompiled headers are kept across restarts (made 0755, owned by this "
        "user); '': /var/tmp/arbiter-pch-<uid>",
    )
    compile_time_limit_s: float = Field(
        default=10.0, gt=0, description="per compile (C++, Go, Rust, Java), outside the tests' budget"
    )
    compile_cache_mb: int = Field(
        default=256,
        ge=1,
        description="compiled programs and compile errors kept by source, command and the compile's "
        "limits (a compile a resource limit stopped is never kept)",
    )
    compile_memory_mb: int = Field(
        default=1024, ge=64, description="memory for a compile, at least the tests' (tests keep theirs)"
    )
    max_binary_mb: int = Field(default=16, ge=1, description="a larger compiled program is a compile error")
    testlib_header: str = Field(
        default="",
        description="testlib.h for C++ checker programs that include it (sent beside their source "
        "into the sandbox that compiles them); empty: /usr/local/include/testlib.h or "
        "/usr/include/testlib.h where the host has one",
    )
    run_code_workers: int = Field(
        default=0,
        ge=0,
        description="/run_code runs at once, on threads of their own (never the grader's workers: a "
        "sleeping /run_code program cannot delay a graded sample); 0: as many as the grader's workers",
    )
    run_code_per_caller: int = Field(
        default=0,
        ge=0,
        description="of those, at most this many for one caller (the X-Arbiter-Caller header, else "
        "the client's address); 0: no cap beyond run_code_workers (freed slots go to callers in turn)",
    )
    run_code_queue: int = Field(
        default=256, ge=0, description="/run_code requests waiting for a slot; past it, 504 at once"
    )
    run_code_queue_per_caller: int = Field(
        default=0, ge=0, description="waiting requests of one caller; 0: run_code_queue"
    )
    run_code_max_wait_s: float = Field(
        default=5.0,
        gt=0,
        description="a /run_code request not started within this is answered 504 (veRL's client "
        "retries on 504): every answer comes inside veRL's HTTP timeout (compile + run + 10 s)",
    )
    run_code_max_files: int = Field(
        default=64, ge=0, description="files, and fetch_files, per /run_code request"
    )
    run_code_files_mb: int = Field(
        default=16, ge=0, description="/run_code files uploaded, and files fetched back, in all (MB)"
    )
    python_site: bool = Field(default=False, description="import site (dist-packages) in the sandbox")
    sandbox_uid: int = Field(default=65534, ge=1, description="host uid of sandboxes when the grader is root")
