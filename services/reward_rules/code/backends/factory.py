"""Picks the sandbox backend named in the config: bwrap (default), unsafe or sandboxfusion.

Checking is cheap and happens when the grader is built; starting (pools, warm sandboxes, an
HTTP client) waits for the grader's first batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from services.reward_rules.code.backends.base import SandboxSource
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.reuse import ReusedSandboxes
from services.reward_rules.code.backends.bwrap.sandbox import Limits, bwrap_path
from services.reward_rules.code.config import CodeConfig
from services.reward_rules.code.labelrun import LabelRunPool
from services.reward_rules.code.runner import LanguageRunner
from services.scoring.grader import GraderUnavailableError


class SandboxUnavailableError(GraderUnavailableError):
    """bubblewrap is missing and unsafe mode was not chosen."""


def check_backend(config: CodeConfig, log: logging.Logger) -> None:
    """Refuses a backend that cannot run; warns loudly about the unsafe one."""
    if config.backend == "local" and config.sandbox == "bwrap" and bwrap_path() is None:
        raise SandboxUnavailableError(
            "the code grader needs bubblewrap (`apt-get install bubblewrap`); to run candidate code "
            "WITHOUT ANY ISOLATION set reward_rules.code.sandbox=unsafe"
        )
    if config.backend == "sandboxfusion" and not config.sandboxfusion_url:
        raise ValueError("backend sandboxfusion needs sandboxfusion_url")
    if config.backend == "local" and config.sandbox == "unsafe":
        log.warning(
            "!!! code grader in UNSAFE mode: candidate programs run WITHOUT a sandbox, "
            "with this machine's files and network. Never use it for untrusted rollouts. !!!"
        )


@dataclass(frozen=True)
class SandboxBackend:
    source: SandboxSource  # where the tests' programs run
    pool: SandboxPool | None  # the local pool (C++ needs it); None with sandboxfusion
    label_runs: LabelRunPool | None  # where label code runs: local even with SandboxFusion
    stdio: ReusedSandboxes | None  # stdio-only sandboxes, reused once proven clean


def start_backend(config: CodeConfig, runner: LanguageRunner, limits: Limits, workers: int) -> SandboxBackend:
    def local_pool(warm: int) -> SandboxPool:
        return SandboxPool(
            runner,
            limits,
            mode=config.sandbox,
            warm=warm,
            host_uid=config.sandbox_uid,
            seccomp=config.seccomp,
        )

    if config.backend == "sandboxfusion":
        from services.reward_rules.code.backends.sandboxfusion import SandboxFusionSource

        source = SandboxFusionSource(config.sandboxfusion_url, limits)
        label_runs = None
        if config.sandbox == "unsafe" or bwrap_path() is not None:
            label_runs = LabelRunPool(local_pool(workers), keep=workers)
        return SandboxBackend(source, None, label_runs, None)
    pool = local_pool(config.warm_sandboxes or 2 * workers)
    label_runs = LabelRunPool(pool, keep=workers)
    stdio = (
        ReusedSandboxes(pool, keep=workers) if config.reuse_sandboxes and config.sandbox == "bwrap" else None
    )
    return SandboxBackend(pool, pool, label_runs, stdio)
