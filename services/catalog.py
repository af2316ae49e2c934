"""Every service this install can run, and how to build it from the settings tree.

The CLI, `python -m services.<name>` and the deploy recipes all start services from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.common.grader import Grader
from services.common.server import GraderServer
from services.common.settings import ServerSettings
from services.settings import ArbiterSettings


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    summary: str
    grader_names: tuple[str, ...]  # graders that `arbiter score --grader NAME` can pick alone
    server_settings: Callable[[ArbiterSettings], ServerSettings]
    build: Callable[[ArbiterSettings], Grader]
    build_one: Callable[[ArbiterSettings, str], Grader]


def _reward_rules() -> ServiceSpec:
    from services.reward_rules import service as rules

    return ServiceSpec(
        name="reward_rules",
        summary="rule graders: " + ", ".join(rules.GRADERS),
        grader_names=tuple(rules.GRADERS),
        server_settings=lambda s: s.reward_rules,
        build=lambda s: rules.build_grader(s.reward_rules),
        build_one=lambda s, name: rules.build_one(s.reward_rules, name),
    )


SERVICES: dict[str, Callable[[], ServiceSpec]] = {"reward_rules": _reward_rules}


def service(name: str) -> ServiceSpec:
    if name not in SERVICES:
        raise KeyError(f"unknown service {name!r}; available: {', '.join(SERVICES)}")
    return SERVICES[name]()


def grader_names() -> dict[str, str]:
    """Grader name -> the service that has it; a service's own name grades with all of them."""
    names: dict[str, str] = {}
    for service_name in SERVICES:
        names[service_name] = service_name
        for grader_name in service(service_name).grader_names:
            names.setdefault(grader_name, service_name)
    return names


def build_named_grader(name: str, settings: ArbiterSettings) -> Grader:
    """A service's full grader by service name, or one of its graders by grader name."""
    owners = grader_names()
    if name not in owners:
        raise KeyError(f"unknown grader {name!r}; available: {', '.join(owners)}")
    spec = service(owners[name])
    return spec.build(settings) if name == spec.name else spec.build_one(settings, name)


def make_server(name: str, settings: ArbiterSettings) -> GraderServer:
    spec = service(name)
    return GraderServer(
        name, spec.build(settings), spec.server_settings(settings), settings.cache, settings.emergence
    )
