"""Container health check: GET /healthz on the service's own HTTP port.

`python healthcheck.py SERVICE [PATH]` exits 0 when the service answers 200, 1 otherwise.
The port is the one the service itself reads, in the same precedence: the
`ARBITER_<SERVICE>__HTTP_PORT` variable, else `<service>.http_port` in the ARBITER_CONFIG
YAML, else the settings' default (DEFAULT_PORTS; tests/deploy/test_static.py keeps it equal
to the settings model). A port changed in the mounted config never leaves the check probing
the wrong port.

It imports only the standard library and PyYAML, not the settings model: Docker runs it every
few seconds, and on a loaded 2-core host importing pydantic and every settings module took
longer than the check's timeout, so a busy but healthy replica was marked unhealthy.
With TLS on (`<service>.tls`, mounted certificates), it speaks HTTPS without verifying: the
check asks whether the process answers, not who it is. Under mutual TLS (`tls.client_ca_file`)
it presents the service's own certificate, which must then allow client authentication too
(extended key usage clientAuth beside serverAuth).
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any

DEFAULT_PORTS = {"gateway": 8100, "reward_rules": 8101, "reward_rm": 8102, "judge_proxy": 8103}


def _section(service: str) -> dict[str, Any]:
    path = os.environ.get("ARBITER_CONFIG")
    if not path or not os.path.isfile(path):
        return {}
    import yaml

    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle) or {}
    section = document.get(service) if isinstance(document, dict) else None
    return section if isinstance(section, dict) else {}


def port_of(service: str) -> int:
    env = os.environ.get(f"ARBITER_{service.upper()}__HTTP_PORT")
    if env:
        return int(env)
    configured = _section(service).get("http_port")
    return int(configured) if configured is not None else DEFAULT_PORTS[service]


def tls_files(service: str) -> dict[str, str]:
    """cert_file, key_file, client_ca_file of the service's TLS settings (env over YAML)."""
    section = _section(service).get("tls")
    files = {k: str(v) for k, v in section.items() if v} if isinstance(section, dict) else {}
    for field in ("cert_file", "key_file", "client_ca_file"):
        env = os.environ.get(f"ARBITER_{service.upper()}__TLS__{field.upper()}")
        if env is not None:
            files[field] = env
    return {k: v for k, v in files.items() if v}


def client_context(service: str) -> ssl.SSLContext | None:
    files = tls_files(service)
    if not files.get("cert_file"):
        return None
    context = ssl._create_unverified_context()
    if files.get("client_ca_file"):
        context.load_cert_chain(files["cert_file"], files.get("key_file"))
    return context


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2 or argv[0] not in DEFAULT_PORTS:
        print(f"usage: healthcheck.py {{{','.join(DEFAULT_PORTS)}}} [PATH]", file=sys.stderr)
        return 2
    port = port_of(argv[0])
    path = argv[1] if len(argv) == 2 else "/healthz"
    context = client_context(argv[0])
    scheme = "http" if context is None else "https"
    try:
        with urllib.request.urlopen(
            f"{scheme}://127.0.0.1:{port}{path}", timeout=3, context=context
        ) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"{argv[0]}: {path} on port {port}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
