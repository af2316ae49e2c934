"""The gateway as a Grader: the kit serves it (HTTP, gRPC, batching, cache, dedupe) like any other.

One gateway batch becomes one call per service holding every component sample for it;
components of one sample run concurrently; a component that fails yields its fallback
and a flag, so every sample still gets a composed reward.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.gateway.backends import Backend
from services.gateway.compose import DEGRADED_KEY, CompiledRecipe, component_keys
from services.gateway.conditional import called_key, should_call
from services.gateway.routing import RouteError, Router, implicit_component_name
from services.gateway.settings import ComponentSpec, GatewayServiceSettings
from services.scoring.grader import GraderBase, config_hash

log = logging.getLogger(__name__)

VERSION = "0.1.0"
# A component gets this share of the deadline, so its failure still leaves time to compose.
COMPONENT_BUDGET = 0.8
# A conditional component called late in that share still gets this long (then fails, flagged).
MIN_COMPONENT_S = 0.5


class GatewayGrader(GraderBase):
    def __init__(
        self,
        settings: GatewayServiceSettings,
        backends: Mapping[str, Backend],
        grader_owners: Mapping[str, str],
    ) -> None:
        """`grader_owners` maps each grader name (and each service name) to the service that has it."""
        self.settings = settings
        self.backends = dict(backends)
        self.owners = {name: owner for name, owner in grader_owners.items() if owner in self.backends}
        self.router = Router(settings.routes, settings.recipes, self.owners)
        self._compiled: dict[str, CompiledRecipe] = {}
        for name, recipe in settings.recipes.items():
            for component_name, component in recipe.components.items():
                self._service_of(component, f"recipes.{name}.components.{component_name}")
            self._compiled[name] = CompiledRecipe(name, recipe)
        self._forward: tuple[str, ...] = ()
        self._backend_identity: dict[str, list[str]] = {}
        self._info = self._make_info()

    def _service_of(self, component: ComponentSpec, where: str = "label") -> str:
        service = component.service or self.owners.get(component.grader)
        if service is None or service not in self.backends:
            raise ValueError(
                f"{where}: no service has grader {component.grader!r} "
                f"(services here: {', '.join(sorted(self.backends)) or 'none'})"
            )
        return service

    def _make_info(self) -> GraderInfo:
        routing = self.settings.model_dump(mode="json", include={"routes", "recipes"})
        return GraderInfo(
            name="gateway",
            version=VERSION,
            config_hash=config_hash({"routing": routing, "backends": self._backend_identity}),
            capabilities=sorted(self.settings.recipes),
        )

    @property
    def log_keys(self) -> Sequence[str]:
        # Components of the configured recipes, and of the one-grader recipes labels can name.
        names = sorted(
            {c for recipe in self.settings.recipes.values() for c in recipe.components}
            | {implicit_component_name(grader) for grader in self.owners}
        )
        keys = [key for name in names for key in component_keys(name)]
        conditional = sorted(
            {
                key
                for recipe in self.settings.recipes.values()
                for name, component in recipe.components.items()
                if component.when is not None
                for key in (called_key(name), component.decision_log)
                if key
            }
        )
        return (*keys, *conditional, DEGRADED_KEY, *self._forward)

    async def start(self) -> None:
        """Start the backends and learn each one's identity and log keys (stable for the run)."""
        await asyncio.gather(*(b.start() for b in self.backends.values()))
        infos = await asyncio.gather(*(b.info() for b in self.backends.values()))
        forward: list[str] = []
        for name, info in zip(self.backends, infos, strict=True):
            if info is None:
                log.warning("gateway: %s did not answer Info; its grader logs will not be forwarded", name)
                continue
            self._backend_identity[name] = [info.name, info.version, info.config_hash]
            forward.extend(info.log_keys)
        self._forward = tuple(dict.fromkeys(forward))
        self._info = self._make_info()

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        plans: list[CompiledRecipe | str] = []
        for sample in samples:
            try:
                name, spec = self.router.route(sample)
            except RouteError as exc:
                plans.append(str(exc))
                continue
            recipe = self._compiled.get(name)
            if recipe is None or recipe.spec is not spec:
                recipe = self._compiled.setdefault(f"grader:{name}", CompiledRecipe(name, spec))
            plans.append(recipe)

        outcomes: list[dict[str, Result | str]] = [{} for _ in samples]
        budget = self.settings.deadline_s * COMPONENT_BUDGET
        until = time.monotonic() + budget
        # The components always called, then the conditional ones whose condition their results meet.
        await self._call(samples, plans, outcomes, lambda _, component: component.when is None, budget)
        await self._call(
            samples,
            plans,
            outcomes,
            lambda index, component: component.when is not None and should_call(component, outcomes[index]),
            max(MIN_COMPONENT_S, until - time.monotonic()),
            cap=True,
        )

        results: list[Result] = []
        for plan, outcome in zip(plans, outcomes, strict=True):
            if isinstance(plan, str):
                results.append(Result(reward=0.0, score=0.0, status=Status.INVALID_INPUT, detail=plan))
            else:
                results.append(plan.compose(outcome, self._forward))
        return results

    async def _call(
        self,
        samples: Sequence[Sample],
        plans: list[CompiledRecipe | str],
        outcomes: list[dict[str, Result | str]],
        chosen: Callable[[int, ComponentSpec], bool],
        budget: float,
        cap: bool = False,
    ) -> None:
        """Score the `chosen` components of every sample into `outcomes`: each within its own
        timeout_s, else `budget` seconds (`cap`: at most `budget`); one call per service for the
        whole batch."""
        calls: dict[tuple[str, float], list[tuple[int, str, Sample]]] = {}
        for index, (sample, plan) in enumerate(zip(samples, plans, strict=True)):
            if isinstance(plan, str):
                continue
            for component_name, component in plan.spec.components.items():
                if not chosen(index, component):
                    continue
                try:
                    service = self._service_of(component)
                except ValueError as exc:
                    plans[index] = str(exc)
                    break
                timeout = component.timeout_s or budget
                timeout = min(timeout, budget) if cap else timeout
                extra = dict(component.metadata)
                if component.grader != service:  # tell the service which of its graders to use
                    extra["grader"] = component.grader
                routed = (
                    sample.model_copy(update={"metadata": {**sample.metadata, **extra}}) if extra else sample
                )
                calls.setdefault((service, timeout), []).append((index, component_name, routed))
        keys = list(calls)
        replies = await asyncio.gather(
            *(self.backends[service].score([s for _, _, s in calls[(service, t)]], t) for service, t in keys),
            return_exceptions=True,
        )
        for key, reply in zip(keys, replies, strict=True):
            entries = calls[key]
            if isinstance(reply, BaseException):
                why = f"{key[0]}: {type(reply).__name__}: {reply}"
                for index, component_name, _ in entries:
                    outcomes[index][component_name] = why
            else:
                for (index, component_name, _), result in zip(entries, reply, strict=True):
                    outcomes[index][component_name] = result

    async def aclose(self) -> None:
        await asyncio.gather(*(b.aclose() for b in self.backends.values()))
