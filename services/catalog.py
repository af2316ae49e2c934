"""Every service this install can run, and how to build it from the settings tree.

The CLI, `python -m services.<name>` and the deploy recipes all start services from here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.common.settings import ServerSettings
from services.scoring.engine import Observer, ScoringEngine, assemble_engine
from services.scoring.grader import Grader
from services.settings_tree import ArbiterSettings

if TYPE_CHECKING:  # the HTTP/gRPC stack loads only to serve: `arbiter score` starts without it
    from services.common.fleet import Fleet
    from services.transports.server import GraderServer

Peers = Mapping[str, ScoringEngine]


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    summary: str
    grader_names: tuple[str, ...]  # graders that `arbiter score --grader NAME` can pick alone
    server_settings: Callable[[ArbiterSettings], ServerSettings]
    build: Callable[[ArbiterSettings], Grader]
    build_one: Callable[[ArbiterSettings, str], Grader]
    uses_peers: bool = False  # composes other services (the gateway): started after them
    # Why `arbiter serve` (all services) leaves it out on these settings; "" when it can run.
    not_ready: Callable[[ArbiterSettings], str] = lambda _: ""
    # HTTP routes of its own beside the kit's, given its built grader (APIRouters)
    routers: Callable[[Grader], list[Any]] = lambda _: []


def _extensions(name: str, settings: ArbiterSettings) -> list[Any]:
    """Stateful parts a service carries beside its scoring: episodes, on the service that holds them."""
    if not settings.episodes.enabled or settings.episodes.service != name:
        return []
    from services.episodes.extension import episodes

    return [episodes(settings.episodes)]


def _reward_rules() -> ServiceSpec:
    from services.reward_rules import build as rules

    return ServiceSpec(
        name="reward_rules",
        summary="rule graders: " + ", ".join(rules.GRADERS),
        grader_names=tuple(rules.GRADERS),
        server_settings=lambda s: s.reward_rules,
        build=lambda s: rules.build_grader(s.reward_rules),
        build_one=lambda s, name: rules.build_one(s.reward_rules, name),
        routers=lambda grader: [_fusion_router(grader)],
    )


def _fusion_router(grader: Grader) -> Any:
    from services.reward_rules.run_code_api import fusion_router  # SandboxFusion's /run_code

    return fusion_router(grader)


def _judge_proxy() -> ServiceSpec:
    from services.judge_proxy import build as judge

    return ServiceSpec(
        name="judge_proxy",
        summary="LLM judge over OpenAI-compatible upstreams (helpfulness, correctness, pairwise, yours)",
        grader_names=judge.GRADERS,
        server_settings=lambda s: s.judge_proxy,
        build=lambda s: judge.build_grader(s.judge_proxy),
        build_one=lambda s, name: judge.build_one(s.judge_proxy, name),
    )


def _reward_rm() -> ServiceSpec:
    from services.reward_rm import build as rm

    return ServiceSpec(
        name="reward_rm",
        summary="reward model (OpenRLHF RewardModel or HF *ForSequenceClassification): transformers or vLLM",
        grader_names=("rm",),
        server_settings=lambda s: s.reward_rm,
        build=lambda s: rm.build_grader(s.reward_rm),
        build_one=lambda s, _: rm.build_grader(s.reward_rm),
        not_ready=lambda s: (
            ""
            if s.reward_rm.checkpoint
            else "no checkpoint (reward_rm.checkpoint / ARBITER_REWARD_RM__CHECKPOINT)"
        ),
    )


def _gateway() -> ServiceSpec:
    def build(settings: ArbiterSettings) -> Grader:
        return build_gateway_grader(settings, peers={})

    return ServiceSpec(
        name="gateway",
        summary="routes each sample to its recipe, composes component rewards, /v1/stats",
        grader_names=(),
        server_settings=lambda s: s.gateway,
        build=build,
        build_one=lambda s, _: build(s),
        uses_peers=True,
    )


SERVICES: dict[str, Callable[[], ServiceSpec]] = {
    "reward_rules": _reward_rules,
    "judge_proxy": _judge_proxy,
    "reward_rm": _reward_rm,
    "gateway": _gateway,
}


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


def owner(name: str) -> str | None:
    """The service of a grader name, as `grader_names()[name]`, loading only the services it walks."""
    for service_name in SERVICES:
        if name == service_name or name in service(service_name).grader_names:
            return service_name
    return None


def build_named_grader(name: str, settings: ArbiterSettings) -> Grader:
    """A service's full grader by service name, or one of its graders by grader name."""
    found = owner(name)
    if found is None:
        raise KeyError(f"unknown grader {name!r}; available: {', '.join(grader_names())}")
    spec = service(found)
    return spec.build(settings) if name == spec.name else spec.build_one(settings, name)


def make_engine(
    name: str,
    settings: ArbiterSettings,
    grader: Grader | None = None,
    observers: Sequence[Observer] = (),
) -> ScoringEngine:
    """A service's engine (cache, dedupe, batcher, deadlines) over its grader, or over `grader`.

    The settings tree's engine for a service: a composing service in this process, the eval tool
    and the Ray Serve replicas take theirs from here (built by engine.assemble_engine).
    """
    spec = service(name)
    engine_type = ScoringEngine
    if name == "gateway":
        from services.gateway.group import GroupingEngine  # group-aware recipes (docs/group-rewards.md)

        engine_type = GroupingEngine
    return assemble_engine(
        grader if grader is not None else spec.build(settings),
        spec.server_settings(settings),
        settings.cache,
        settings.emergence,
        observers=observers,
        engine_type=engine_type,
    )


def named_engine(name: str, settings: ArbiterSettings) -> ScoringEngine:
    """The engine over a service's full grader or one of its graders, by name (`--grader`)."""
    found = owner(name)
    if found is None:
        raise KeyError(f"unknown grader {name!r}; available: {', '.join(grader_names())}")
    return make_engine(found, settings, grader=build_named_grader(name, settings))


def build_gateway_grader(settings: ArbiterSettings, peers: Peers) -> Grader:
    from services.gateway.build import build_gateway

    return build_gateway(
        settings.gateway,
        grader_names(),
        local_engines=peers,
        local_factory=lambda name: make_engine(name, settings),
    )


def make_server(
    name: str, settings: ArbiterSettings, peers: Peers | None = None, fleet: Fleet | None = None
) -> GraderServer:
    """Service `name` ready to start; with a `fleet`, as one of several workers on its ports."""
    from services.transports.server import GraderServer

    spec = service(name)
    scope = fleet.scoped(name) if fleet is not None else None
    server = spec.server_settings(settings)
    if name == "gateway":
        from services.gateway.group import GroupingEngine
        from services.gateway.stats import RollingStats

        stats = RollingStats(settings.gateway.stats_window)
        if scope is not None and any(r.group is not None for r in settings.gateway.recipes.values()):
            logging.getLogger(__name__).warning(
                "gateway: several workers with group-aware recipes: a group's one-sample requests land in "
                "different workers and come back group/incomplete; use one (docs/group-rewards.md)"
            )
        return GraderServer(
            name,
            build_gateway_grader(settings, peers or {}),
            server,
            settings.cache,
            settings.emergence,
            observers=[stats.observe],
            routers=[stats.router(scope)],
            fleet=scope,
            engine_type=GroupingEngine,
            extensions=_extensions(name, settings),
        )
    grader = spec.build(settings)
    return GraderServer(
        name,
        grader,
        server,
        settings.cache,
        settings.emergence,
        routers=spec.routers(grader),
        fleet=scope,
        extensions=_extensions(name, settings),
    )


def per_worker(settings: ArbiterSettings, workers: int) -> ArbiterSettings:
    """The settings each of `workers` processes serves with (`workers: N`): limits one process
    enforces alone are shared out, so the service as a whole keeps them (the judge's upstream
    caps). Per-process resources (math pool, sandbox slots, a model in memory) are per worker."""
    share = settings.model_copy()
    share.judge_proxy = settings.judge_proxy.per_worker(workers)  # in-process under the gateway too
    return share


def start_order(names: list[str]) -> list[str]:
    """Services that compose others come last, so they can reuse the others' engines."""
    return sorted(names, key=lambda n: service(n).uses_peers)
