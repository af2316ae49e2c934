"""deploy/k8s rendered by kustomize and every object validated against the Kubernetes schemas, offline.

Needs `kubectl` (its built-in kustomize) and `kubernetes-validate` (PyPI; it carries the
schemas, so nothing is fetched from a cluster). `.ci/k8s` installs both (kubectl from Debian
trixie's kubernetes-client, kubernetes-validate in its own venv) and runs this file; elsewhere
it skips when either is missing. ARBITER_K8S_VALIDATE names the validator's executable.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# The oldest Kubernetes the manifests promise (hostUsers / user-namespaced pods: 1.30) and the newest.
VERSIONS = ("1.30.0", "1.37.0")

KUBECTL = shutil.which("kubectl")
VALIDATE = os.environ.get("ARBITER_K8S_VALIDATE") or shutil.which("kubernetes-validate")

pytestmark = pytest.mark.skipif(
    KUBECTL is None or VALIDATE is None,
    reason="needs kubectl and kubernetes-validate (.ci/k8s installs both)",
)


def render(directory: Path) -> str:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def validate(manifest: Path, version: str) -> subprocess.CompletedProcess[str]:
    assert VALIDATE is not None
    return subprocess.run(
        [VALIDATE, "--strict", "--no-warn", "-k", version, str(manifest)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_rendered_object_is_valid(tmp_path: Path, version: str) -> None:
    rendered = render(ROOT / "deploy/k8s")
    objects = [doc for doc in yaml.safe_load_all(rendered) if doc]
    kinds = {doc["kind"] for doc in objects}
    assert {"Namespace", "ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler"} <= kinds
    manifest = tmp_path / "all.yaml"
    manifest.write_text(rendered)
    done = validate(manifest, version)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = [line for line in done.stdout.splitlines() if " passed for resource " in line]
    assert len(passed) == len(objects), done.stdout  # every object, not just the first


def test_the_validator_rejects_a_wrong_field(tmp_path: Path) -> None:
    """The check has teeth: an unknown field (strict) and a wrong type both fail."""
    rendered = render(ROOT / "deploy/k8s")
    objects = [doc for doc in yaml.safe_load_all(rendered) if doc]
    deployment = next(doc for doc in objects if doc["kind"] == "Deployment")
    for broken in ("unknown", "type"):
        doc = yaml.safe_load(yaml.safe_dump(deployment))
        if broken == "unknown":
            doc["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
        else:
            doc["spec"]["replicas"] = "two"
        manifest = tmp_path / f"{broken}.yaml"
        manifest.write_text(yaml.safe_dump(doc))
        assert validate(manifest, VERSIONS[-1]).returncode != 0, broken
