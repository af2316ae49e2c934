"""Test doubles and small helpers shared by the tests (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.common.settings import ServerSettings
from services.reward_rules.dispatch import RulesGrader
from services.reward_rules.format_rules import FormatGrader
from testkit.procs import ServiceProcess, free_port

__all__ = [
    "ScriptedGrader",
    "ServiceProcess",
    "WatchedGrader",
    "free_port",
    "rules_grader",
    "server_settings",
]


def server_settings(**overrides: object) -> ServerSettings:
    base: dict[str, object] = {"host": "127.0.0.1", "http_port": 0, "grpc_port": 0}
    base.update(overrides)
    return ServerSettings.model_validate(base)


def rules_grader() -> RulesGrader:
    return RulesGrader({"format": FormatGrader()}, default="format")


class ScriptedGrader:
    """A grader whose behaviour each test scripts through the sample text.

    response "raise"   -> the whole batch raises (the kit must isolate the culprit)
    response "hang"    -> never answers (the kit must time out)
    response "slow:S"  -> answers after S seconds
    anything else      -> reward = len(response)
    """

    def __init__(self, batch_delay_s: float = 0.0) -> None:
        self.batches: list[int] = []
        self.batch_delay_s = batch_delay_s
        self._info = GraderInfo(name="scripted", version="1", config_hash="test")

    @property
    def info(self) -> GraderInfo:
        return self._info

    @property
    def log_keys(self) -> Sequence[str]:
        return ("scripted/len",)

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        self.batches.append(len(samples))
        if self.batch_delay_s:
            await asyncio.sleep(self.batch_delay_s)
        for sample in samples:
            if sample.response == "raise":
                raise RuntimeError("scripted failure")
            if sample.response == "hang":
                await asyncio.Event().wait()
            if sample.response.startswith("slow:"):
                await asyncio.sleep(float(sample.response[5:]))
        return [
            Result(
                reward=float(len(s.response)),
                score=1.0,
                status=Status.OK,
                detail="ok",
                logs={"scripted/len": float(len(s.response))},
            )
            for s in samples
        ]

    async def aclose(self) -> None:
        return None


class WatchedGrader(ScriptedGrader):
    """A ScriptedGrader that counts the grading cancelled under it (nobody waited any more)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = 0

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        try:
            return await super().score(samples)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
