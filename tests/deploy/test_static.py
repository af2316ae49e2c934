"""Docker has no engine here: the compose file, the Kubernetes manifests and the Dockerfile are
checked against the package itself (entry points, settings names, ports, HTTP paths, files)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.manifests import (
    DEPLOY,
    ROOT,
    Stage,
    compose_default,
    env_field_problem,
    env_names,
    exec_form,
    http_paths,
    inherited,
    load_container_settings,
    read_dockerfile,
    service_of,
    settings_model,
)

COMPOSE = DEPLOY / "docker-compose.yml"
CONFIG = DEPLOY / "config" / "arbiter.yaml"
K8S = DEPLOY / "k8s"
DOCKERFILE = DEPLOY / "Dockerfile"
SERVICES = ("gateway", "reward_rules", "judge_proxy", "reward_rm")


def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def arbiter_services(services: dict[str, Any]) -> dict[str, str]:
    """Compose service -> the Arbiter service its command serves."""
    found = {}
    for name, spec in services.items():
        command = spec.get("command")
        if isinstance(command, list) and command[:2] in (["python", "-m"], ["python3", "-m"]):
            served = service_of(command)
            if served is not None:
                found[name] = served
    return found


def first_in(chain: list[Stage], keyword: str) -> str:
    """The nearest stage's last KEYWORD line (a stage inherits CMD, USER, HEALTHCHECK)."""
    for stage in chain:
        found = stage.last(keyword)
        if found is not None:
            return found
    raise AssertionError(f"no {keyword} in {[s.name for s in chain]}")


def healthcheck_target(test: list[str]) -> tuple[str, str]:
    """["CMD", python, /opt/arbiter/healthcheck.py, SERVICE, PATH] -> (SERVICE, PATH)."""
    assert test[0] == "CMD" and test[2] == "/opt/arbiter/healthcheck.py", test
    return test[3], test[4] if len(test) > 4 else "/healthz"


def test_every_service_has_an_image_target_and_a_compose_entry() -> None:
    stages = read_dockerfile(DOCKERFILE)
    served = set(arbiter_services(compose()["services"]).values())
    for service in SERVICES:
        assert service in stages, f"deploy/Dockerfile has no target {service}"
        assert service in served, f"docker-compose.yml runs no {service}"


def test_dockerfile_targets_are_runnable_and_non_root() -> None:
    stages = read_dockerfile(DOCKERFILE)
    targets = [*SERVICES, "reward_rm_vllm"]
    paths = http_paths()
    for target in targets:
        chain = inherited(stages, target)
        cmd = first_in(chain, "CMD")
        service = service_of(exec_form(cmd))
        assert service == target.removesuffix("_vllm"), (target, cmd)
        user = first_in(chain, "USER")
        assert user.split(":")[0] not in ("root", "0"), f"{target} runs as {user}"
        health = first_in(chain, "HEALTHCHECK")
        check = exec_form(health.split(" CMD ", 1)[1])
        assert check[1:3] == ["/opt/arbiter/healthcheck.py", service], (target, check)
        assert "/healthz" in paths
        names = env_names([args for s in chain for args in s.all("ENV")])
        assert f"ARBITER_{service.upper()}__HOST" in names, f"{target} binds 127.0.0.1 in its container"
        model = settings_model()
        problems = [p for p in (env_field_problem(n, model) for n in sorted(names)) if p]
        assert not problems, problems
        ports = {int(p) for s in chain for args in s.all("EXPOSE") for p in args.split()}
        if service != "reward_rm":  # not in the catalog until it is registered
            defaults = getattr(model(), service)
            assert {defaults.http_port, defaults.grpc_port} <= ports, (target, ports)


def test_dockerfile_copies_only_what_exists_and_is_not_ignored() -> None:
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text()
    kept = {line[1:].rstrip("/") for line in ignore.splitlines() if line.startswith("!")}
    for stage in read_dockerfile(DOCKERFILE).values():
        for args in stage.all("COPY"):
            if args.startswith("--from="):
                continue
            *sources, _ = args.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the build context"
                assert any(source == k or source.startswith(k + "/") for k in kept), (
                    f"COPY {source}: excluded by deploy/Dockerfile.dockerignore"
                )


def test_the_healthcheck_script_reads_the_port_from_settings() -> None:
    import subprocess
    import sys

    # nothing listens on an unused port: exit 1 with a message naming the service and path
    env = {"ARBITER_GATEWAY__HTTP_PORT": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "healthcheck.py"), "gateway"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "gateway: /healthz on port 1" in done.stderr


def test_compose_config_and_env_names_match_the_settings_model() -> None:
    document = compose()
    services = document["services"]
    paths = http_paths()
    for name, served in arbiter_services(services).items():
        spec = services[name]
        env = {str(k): str(v) for k, v in (spec.get("environment") or {}).items()}
        problems = [p for p in (env_field_problem(k, settings_model()) for k in env) if p]
        assert not problems, problems
        assert env.get("ARBITER_CONFIG") == "/etc/arbiter/arbiter.yaml"
        assert f"./config/arbiter.yaml:{env['ARBITER_CONFIG']}:ro" in spec["volumes"], name
        assert env.get(f"ARBITER_{served.upper()}__HOST") == "0.0.0.0", f"{name} binds loopback only"
        settings = load_container_settings(CONFIG, env)
        server = getattr(settings, served)
        exposed = {int(str(p).split(":")[-1]) for p in [*spec.get("expose", []), *spec.get("ports", [])]}
        assert {server.http_port, server.grpc_port} <= exposed, (name, exposed)
        checked, path = healthcheck_target(spec["healthcheck"]["test"])
        assert checked == served and path in paths, (name, checked, path)


def test_compose_wiring_is_consistent() -> None:
    document = compose()
    services = document["services"]
    stages = read_dockerfile(DOCKERFILE)
    for name, spec in services.items():
        for dependency, condition in (spec.get("depends_on") or {}).items():
            assert dependency in services, f"{name} depends on unknown {dependency}"
            assert condition["condition"] == "service_healthy"
            assert "healthcheck" in services[dependency], f"{dependency} has no healthcheck"
        build = spec.get("build")
        if build:
            assert build["target"] in stages and (COMPOSE.parent / build["context"]).is_dir()
            assert (COMPOSE.parent / build["context"] / build["dockerfile"]).is_file()
    assert services["reward_rules"]["deploy"]["replicas"], "reward_rules must be scalable"
    gpu = services["vllm_rm"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert "gpu" in gpu["capabilities"]
    assert "reward_rm" in services["reward_rm_cpu"]["networks"]["default"]["aliases"]
    assert services["reward_rm_cpu"]["environment"]["ARBITER_REWARD_RM__BACKEND"] == "transformers"
    assert services["reward_rm_cpu"]["profiles"] == ["rm-cpu"]
    assert services["reward_rm"]["profiles"] == ["rm-gpu"]
    # optional services: the gateway starts without them (no key, no checkpoint needed)
    for optional in ("judge_proxy", "reward_rm", "reward_rm_cpu"):
        assert services[optional]["profiles"], optional
        assert services["gateway"]["depends_on"][optional]["required"] is False, optional
    for required in ("redis", "reward_rules"):
        assert "profiles" not in services[required]
        assert "required" not in services["gateway"]["depends_on"][required]
    # a missing checkpoint is an error at `up`, never an empty root-owned directory in the checkout
    for name in ("vllm_rm", "reward_rm", "reward_rm_cpu", "vllm_judge"):
        binds = [v for v in services[name]["volumes"] if isinstance(v, dict)]
        assert binds and all(v["bind"]["create_host_path"] is False for v in binds), name
    # fits a 2-CPU host with its defaults; ports on loopback unless asked
    limits = services["reward_rules"]["deploy"]["resources"]["limits"]
    replicas = int(compose_default(str(services["reward_rules"]["deploy"]["replicas"])))
    assert float(compose_default(limits["cpus"])) * replicas <= 2
    assert int(compose_default(limits["pids"])) > 0
    assert all(str(port).startswith("${GATEWAY_BIND:-127.0.0.1}:") for port in services["gateway"]["ports"])


def test_every_variable_compose_uses_is_in_the_env_example() -> None:
    used = set(re.findall(r"\$\{(\w+)", COMPOSE.read_text()))
    example = {
        line.split("=", 1)[0]
        for line in (DEPLOY / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    }
    assert used <= example, used - example
    keys = {u.api_key_env for u in load_container_settings(CONFIG, {}).judge_proxy.upstreams}  # type: ignore[attr-defined]
    assert keys - {None} <= example


def test_compose_gateway_reaches_services_by_their_compose_names() -> None:
    settings = load_container_settings(CONFIG, {})
    services = compose()["services"]
    aliases = {
        a
        for spec in services.values()
        for a in spec.get("networks", {}).get("default", {}).get("aliases", [])
    }
    for name, remote in settings.gateway.services.items():  # type: ignore[attr-defined]
        for replica in remote.replicas:
            host, port = replica.removeprefix("dns:///").rsplit(":", 1)
            assert host in services or host in aliases, replica
            assert int(port) == getattr(settings, name).grpc_port


# -- Kubernetes ----------------------------------------------------------------------------------


def k8s_documents() -> list[dict[str, Any]]:
    documents = []
    for path in sorted(K8S.glob("*.yaml")):
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in k8s_documents() if d["kind"] == kind}


def k8s_config(tmp_path: Path) -> Path:
    path = tmp_path / "arbiter.yaml"
    path.write_text(by_kind("ConfigMap")["arbiter-config"]["data"]["arbiter.yaml"])
    return path


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_k8s_containers_match_the_package(tmp_path: Path) -> None:
    config = k8s_config(tmp_path)
    paths = http_paths()
    configmaps, secrets = by_kind("ConfigMap"), by_kind("Secret")
    served_by_deployment: dict[str, str] = {}
    for name, deployment in by_kind("Deployment").items():
        pod = deployment["spec"]["template"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        for container in pod["spec"]["containers"]:
            assert "requests" in container["resources"], f"{name}/{container['name']} has no requests"
            command = container.get("command") or container.get("args")
            if not command or command[0] not in ("python", "python3"):
                continue
            served = service_of(command)
            if served is None:  # the vLLM launcher beside reward_rm
                continue
            served_by_deployment[name] = served
            env = {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}
            problems = [p for p in (env_field_problem(k, settings_model()) for k in env) if p]
            assert not problems, problems
            assert env.get(f"ARBITER_{served.upper()}__HOST") == "0.0.0.0", f"{name} binds loopback only"
            server = getattr(load_container_settings(config, env), served)
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            assert (ports["http"], ports["grpc"]) == (server.http_port, server.grpc_port), name
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                assert container[probe]["httpGet"] == {"path": path, "port": "http"}, (name, probe)
            assert container["startupProbe"]["httpGet"]["path"] in paths
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
            assert volumes["config"]["configMap"]["name"] in configmaps
            assert Path(mounts["config"]) / "arbiter.yaml" == Path(env["ARBITER_CONFIG"])
            for source in container.get("envFrom", []):
                assert source["secretRef"]["name"] in secrets
    assert set(served_by_deployment.values()) == set(SERVICES)
    assert {"/healthz", "/readyz"} <= paths


def test_k8s_services_and_autoscalers_point_at_real_deployments(tmp_path: Path) -> None:
    deployments = by_kind("Deployment")
    hpas = {h["spec"]["scaleTargetRef"]["name"] for h in by_kind("HorizontalPodAutoscaler").values()}
    for name, service in by_kind("Service").items():
        selected = [
            d
            for d in deployments.values()
            if service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert selected, f"Service {name} selects no Deployment"
        port_names = {
            p.get("name")
            for c in selected[0]["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (name, port)
    arbiter_deployments = {n for n in deployments if n != "redis"}
    assert arbiter_deployments <= hpas, f"no HPA for {arbiter_deployments - hpas}"


def test_k8s_gateway_reaches_every_pod_through_headless_services(tmp_path: Path) -> None:
    settings = load_container_settings(k8s_config(tmp_path), {})
    services = by_kind("Service")
    for name, remote in settings.gateway.services.items():  # type: ignore[attr-defined]
        for replica in remote.replicas:
            assert replica.startswith("dns:///"), replica
            host, port = replica.removeprefix("dns:///").rsplit(":", 1)
            service = services[host.split(".")[0]]
            assert service["spec"].get("clusterIP") == "None", f"{host}: a ClusterIP pins one pod per channel"
            assert int(port) in {p["port"] for p in service["spec"]["ports"]}
            assert int(port) == getattr(settings, name).grpc_port
    secret_keys = set(by_kind("Secret")["arbiter-judge-keys"]["stringData"])
    needed = {u.api_key_env for u in settings.judge_proxy.upstreams} - {None}  # type: ignore[attr-defined]
    assert needed <= secret_keys


@pytest.mark.parametrize(
    "path", sorted(str(p.relative_to(DEPLOY)) for p in [*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])
)
def test_every_yaml_file_parses(path: str) -> None:
    assert all(d is not None for d in yaml.safe_load_all((DEPLOY / path).read_text()))
