"""Container health check: GET /healthz on the service's own HTTP port (from the settings tree).

`python healthcheck.py SERVICE [PATH]` exits 0 when the service answers 200, 1 otherwise. It
reads the port from the same settings the service reads (ARBITER_CONFIG + ARBITER_* env), so
a port changed in the mounted config never leaves the check probing the wrong port.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: healthcheck.py SERVICE [PATH]", file=sys.stderr)
        return 2
    from services import catalog
    from services.settings import load

    port = catalog.service(argv[0]).server_settings(load()).http_port
    path = argv[1] if len(argv) == 2 else "/healthz"
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"{argv[0]}: {path} on port {port}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
