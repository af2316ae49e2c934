"""Arbiter as a Ray Serve application: every service a deployment, the gateway its HTTP ingress.

Each service deployment runs the kit's `ScoringEngine` over the service's own grader (cache,
in-flight dedupe, micro-batcher, deadlines: the same pipeline as `python -m services.<name>`),
so batching is the kit's, not `@serve.batch`. The gateway deployment is the ingress: the kit's
HTTP app (`/get_reward`, `/v1/score`, `/v1/info`, `/healthz`, `/readyz`, `/metrics`,
`/v1/stats`) over the gateway grader, whose backends are Ray Serve handles to the service
deployments instead of gRPC replicas. A handle call carries one gateway batch, so each service
replica sees batches, and Serve's router spreads them over replicas by queue length.

    serve run deploy/ray_serve.yaml               # Serve's own CLI (config: deploy/ray_serve.yaml)
    arbiter serve --ray [--config arbiter.yaml]   # the same app, options from deploy/ray_serve.yaml

It lives in services/ (a way to host the services, beside launch.py for one process), so the CLI
imports nothing from deploy/; deploy/ray_serve.yaml names it by import path.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from ray import serve
from ray.exceptions import RayError
from ray.serve import Deployment
from ray.serve.handle import DeploymentHandle

from arbiter.contract import GraderInfo, Result, Sample
from services import catalog
from services.gateway.backends import BackendError
from services.gateway.grader import GatewayGrader
from services.gateway.stats import RollingStats
from services.settings_tree import ArbiterSettings, load
from services.transports.http_app import ASGIApp, build_http_app

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVE_CONFIG = REPO_ROOT / "deploy" / "ray_serve.yaml"
APP_NAME = "arbiter"
SettingsDump = dict[str, Any]


def settings_from_dump(dump: SettingsDump) -> ArbiterSettings:
    """Settings as the driver loaded them (only the fields it set, so defaults are per replica)."""
    return ArbiterSettings(**dump)


def fit_workers_to_cpus(service: str, dump: SettingsDump, cpus: float) -> SettingsDump:
    """Size the rule graders' process pools to the replica's Ray CPUs, unless the config chose.

    Their defaults follow os.cpu_count(): on a 64-core node, every replica would start 64 math
    workers whatever its num_cpus, and replicas would fight over the same cores.
    """
    if service != "reward_rules" or cpus <= 0:
        return dump
    section = dict(dump.get("reward_rules") or {})
    workers = max(1, math.floor(cpus))
    for grader in ("math", "code"):
        options = dict(section.get(grader) or {})
        options.setdefault("workers", workers)
        section[grader] = options
    return {**dump, "reward_rules": section}


def _assigned_cpus() -> float:
    import ray

    resources = ray.get_runtime_context().get_assigned_resources()
    return float(resources.get("CPU", 0.0))


class ServiceReplicaImpl:
    """One replica of one service: its grader behind the kit's engine, called through handles."""

    async def __init__(self, service: str, settings: SettingsDump) -> None:  # type: ignore[misc]
        self.service = service
        resolved = settings_from_dump(fit_workers_to_cpus(service, settings, _assigned_cpus()))
        self.engine = catalog.make_engine(service, resolved)
        await self.engine.start()

    async def info(self) -> GraderInfo:
        return self.engine.info

    async def score(self, samples: list[Sample], timeout_s: float) -> list[Result]:
        # The gateway computes the emergence statistics once for the composed sample.
        return await self.engine.score(samples, timeout_s, emergence=False)

    async def check_health(self) -> None:
        if not self.engine.ready:
            raise RuntimeError(f"{self.service}: engine stopped")

    async def __del__(self) -> None:
        await self.engine.stop()


class HandleBackend:
    """A gateway backend that is a Ray Serve deployment (Serve balances over its replicas)."""

    def __init__(self, name: str, handle: DeploymentHandle[Any]) -> None:
        self.name = name
        self.handle = handle

    async def start(self) -> None:
        return None

    async def info(self) -> GraderInfo | None:
        try:
            info: GraderInfo = await self.handle.info.remote()
        except RayError as exc:
            log.warning("%s: no info from its deployment (%s)", self.name, exc)
            return None
        return info

    async def score(self, samples: Sequence[Sample], timeout_s: float) -> list[Result]:
        response = self.handle.score.remote(list(samples), timeout_s)
        try:
            results: list[Result] = await asyncio.wait_for(response, timeout_s)
        except TimeoutError as exc:
            response.cancel()
            raise BackendError(f"{self.name}: no answer within {timeout_s:.1f}s") from exc
        except RayError as exc:
            raise BackendError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        return results

    async def aclose(self) -> None:
        return None


class GatewayIngress:
    """The ingress: the kit's HTTP app over the gateway grader, backends are deployment handles."""

    async def __init__(  # type: ignore[misc]
        self, settings: SettingsDump, **services: DeploymentHandle[Any]
    ) -> None:
        resolved = settings_from_dump(settings)
        backends = {name: HandleBackend(name, handle) for name, handle in services.items()}
        grader = GatewayGrader(resolved.gateway, backends, catalog.grader_names())
        stats = RollingStats(resolved.gateway.stats_window)
        self.engine = catalog.make_engine("gateway", resolved, grader=grader, observers=[stats.observe])
        self._app = build_http_app(self.engine, title="arbiter gateway (Ray Serve)", routers=[stats.router()])
        await self.engine.start()

    def __serve_build_asgi_app__(self) -> ASGIApp:
        return self._app

    async def check_health(self) -> None:
        if not self.engine.ready:
            raise RuntimeError("gateway: engine stopped")

    async def __del__(self) -> None:
        await self.engine.stop()


# Serve pickles these by reference: the classes stay importable as services.ray_serve.*.
ServiceReplica: Deployment = serve.deployment()(ServiceReplicaImpl)
Gateway: Deployment = serve.deployment()(serve.ingress()(GatewayIngress))


def services_for(settings: ArbiterSettings, extra: Sequence[str] = ()) -> list[str]:
    """The services the gateway's recipes use (and any named in `extra`), in catalog order."""
    owners = catalog.grader_names()
    wanted = set(extra)
    for recipe in settings.gateway.recipes.values():
        for component in recipe.components.values():
            wanted.add(owners.get(component.service or component.grader, component.service or ""))
    unknown = sorted(name for name in wanted if name not in catalog.SERVICES or name == "gateway")
    if unknown:
        raise ValueError(f"not a service Ray Serve can deploy: {', '.join(unknown)}")
    return [name for name in catalog.SERVICES if name in wanted]


def build_app(
    args: Mapping[str, Any], options: Mapping[str, Mapping[str, Any]] | None = None
) -> serve.Application:
    """The application; `serve run` calls it with the `args` of deploy/ray_serve.yaml.

    args: `config` (an Arbiter YAML; default ARBITER_CONFIG, else embedded defaults) and
    `services` (deployed beside those the recipes use). `options` are per-deployment Serve
    options by name (`arbiter serve --ray` passes the file's; `serve run` applies them itself).
    """
    settings = load(args.get("config") or None)
    dump = settings.model_dump(mode="json", exclude_unset=True)
    options = options or {}
    handles = {
        name: ServiceReplica.options(name=name, **options.get(name, {})).bind(name, dump)
        for name in services_for(settings, args.get("services") or ())
    }
    gateway = Gateway.options(name="gateway", **options.get("gateway", {}))
    app: serve.Application = gateway.bind(dump, **handles)
    return app


def read_serve_config(path: Path = SERVE_CONFIG) -> dict[str, Any]:
    """The one application of a Serve config file, with its deployments' options by name."""
    document = yaml.safe_load(path.read_text())
    application = dict(document["applications"][0])
    application["options"] = {
        d["name"]: {k: v for k, v in d.items() if k != "name"} for d in application.get("deployments", [])
    }
    application["http_options"] = dict(document.get("http_options") or {})
    return application


def minimum_cpus(options: Mapping[str, Mapping[str, Any]], deployments: Sequence[str]) -> float:
    """CPUs the deployments hold at their minimum replica counts (Serve's default: 1 CPU each)."""
    total = 0.0
    for name in deployments:
        option = options.get(name, {})
        autoscaling = option.get("autoscaling_config") or {}
        replicas = autoscaling.get("min_replicas", 1) if autoscaling else option.get("num_replicas", 1)
        cpus = (option.get("ray_actor_options") or {}).get("num_cpus", 1.0)
        total += float(replicas) * float(cpus)
    return total


def fit_to_cluster(
    options: Mapping[str, Mapping[str, Any]], deployments: Sequence[str], cluster_cpus: float
) -> dict[str, dict[str, Any]]:
    """The deployments' options with `num_cpus` scaled down so that their minimum replicas fit.

    deploy/ray_serve.yaml asks for what a training node spares (a 2-CPU gateway, 4-CPU grader
    replicas, 2 of them at least); on a smaller cluster those requests could never be scheduled:
    the replicas would stay pending and the gateway, waiting on them, would never answer
    /healthz. Scaling every request by the same factor keeps their proportions and says so in
    the log; the rule graders' worker pools follow the replica's CPUs (fit_workers_to_cpus).
    Autoscaling above the minimum still asks for the scaled amount per new replica.
    """
    fitted = {name: {**option} for name, option in options.items()}
    need = minimum_cpus(options, deployments)
    if cluster_cpus <= 0 or need <= cluster_cpus:
        return fitted
    factor = cluster_cpus / need
    for name in deployments:
        actor = dict(fitted.get(name, {}).get("ray_actor_options") or {})
        asked = float(actor.get("num_cpus", 1.0))
        actor["num_cpus"] = max(0.01, math.floor(asked * factor * 100) / 100)
        fitted.setdefault(name, {})["ray_actor_options"] = actor
        log.warning(
            "Ray Serve: %s asks for %.2f CPUs per replica; the cluster has %.0f CPUs for %.2f at the "
            "minimum replica counts, so it gets %.2f",
            name,
            asked,
            cluster_cpus,
            need,
            actor["num_cpus"],
        )
    return fitted


def runtime_env() -> dict[str, Any]:
    """Workers import `services.ray_serve` by name: put this checkout (the services, and the
    contract's package in client/) on their path."""
    paths = [str(REPO_ROOT), str(REPO_ROOT / "client"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}


def start(
    config: Path | None = None,
    address: str | None = None,
    host: str | None = None,
    port: int | None = None,
    serve_config: Path = SERVE_CONFIG,
    num_cpus: int | None = None,
) -> str:
    """Connect to (or start) Ray, deploy the app, return the gateway's URL; does not block."""
    import ray

    application = read_serve_config(serve_config)
    args = dict(application.get("args") or {})
    if config is not None:
        args["config"] = str(config)
    settings = load(args.get("config") or None)
    http = application["http_options"]
    http_host = host or http.get("host") or settings.gateway.host
    if port is None and "http_port" in settings.gateway.model_fields_set:
        port = settings.gateway.http_port  # set on purpose (config or ARBITER_GATEWAY__HTTP_PORT): it wins
    http_port = port if port is not None else int(http.get("port") or settings.gateway.http_port)
    if not ray.is_initialized():
        ray.init(address=address, runtime_env=runtime_env(), num_cpus=num_cpus)
    deployments = ["gateway", *services_for(settings, args.get("services") or ())]
    cluster_cpus = float(ray.cluster_resources().get("CPU", 0.0))
    options = fit_to_cluster(application["options"], deployments, cluster_cpus)
    serve.start(http_options={"host": http_host, "port": http_port})
    serve.run(
        build_app(args, options),
        name=application.get("name", APP_NAME),
        route_prefix=application.get("route_prefix", "/"),
    )
    shown = "127.0.0.1" if http_host in ("0.0.0.0", "::") else http_host
    return f"http://{shown}:{http_port}"


def serve_until_signalled(
    config: Path | None = None, address: str | None = None, host: str | None = None
) -> None:
    """`arbiter serve --ray`: deploy, print where, and delete the application on Ctrl+C/SIGTERM."""
    url = start(config, address, host)
    name = read_serve_config().get("name", APP_NAME)
    # Our handlers go in before saying where we serve: ray.init installed its own (which exit at
    # once on SIGTERM without deleting the application), and a user who has read the line below
    # may stop us at any moment after it.
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"arbiter on Ray Serve: {url}\n    OpenRLHF: --reward.remote_url {url}/get_reward", file=sys.stderr)
    while not stop.wait(0.5):  # a timed wait, so the main thread runs the handlers promptly
        pass
    serve.delete(name)
