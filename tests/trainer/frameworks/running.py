"""A gateway process the framework tests drive, with the addresses a trainer is given."""

from __future__ import annotations

from dataclasses import dataclass

from tests.helpers import ServiceProcess


@dataclass
class RunningGateway:
    process: ServiceProcess
    grpc_target: str
    http_url: str
