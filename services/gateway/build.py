"""Builds the gateway: its backends (in-process engines or remote replicas) and its grader."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.gateway.backends import Backend, InProcessBackend, RemoteBackend
from services.gateway.grader import GatewayGrader
from services.gateway.settings import GatewayServiceSettings
from services.scoring.engine import ScoringEngine
from services.transports.auth import load_token


def build_gateway(
    settings: GatewayServiceSettings,
    grader_owners: Mapping[str, str],
    local_engines: Mapping[str, ScoringEngine] | None = None,
    local_factory: Callable[[str], ScoringEngine] | None = None,
) -> GatewayGrader:
    """Remote services come from `settings.services`; every other service is in-process,

    reusing a running engine from `local_engines` (arbiter serve) or building one with
    `local_factory` (the gateway alone, no network hop).
    """
    backends: dict[str, Backend] = {}
    for name, remote in settings.services.items():
        backends[name] = RemoteBackend(
            name,
            remote.replicas,
            health_interval_s=settings.health_interval_s,
            eject_after_failures=settings.eject_after_failures,
            eject_cooldown_s=settings.eject_cooldown_s,
            token=load_token(remote.auth_token_env),
            tls=remote.tls,
        )
    needed = {
        _owner(component.service or component.grader, grader_owners)
        for recipe in settings.recipes.values()
        for component in recipe.components.values()
    } | {  # the graders a group stage asks (votes, pairwise verdicts): services/gateway/group.py
        _owner(name, grader_owners)
        for recipe in settings.recipes.values()
        if recipe.group is not None
        for name in (recipe.group.vote_grader, recipe.group.pairwise_grader)
        if name is not None
    }
    known = set(grader_owners.values())
    for name in sorted((needed & known) - set(backends)):  # unknown names: GatewayGrader says which
        if local_engines and name in local_engines:
            backends[name] = InProcessBackend(name, local_engines[name])
        elif local_factory is not None:
            backends[name] = InProcessBackend(name, local_factory(name), owned=True)
    return GatewayGrader(settings, backends, grader_owners)


def _owner(name: str, owners: Mapping[str, str]) -> str:
    return owners.get(name, name)
