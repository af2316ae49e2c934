"""TLS for every service: HTTPS and gRPC over TLS on both ports, optional mTLS.

`<service>.tls` in the settings: `cert_file` + `key_file` turn TLS on for both the HTTP and the
gRPC port; `client_ca_file` also makes both require a client certificate signed by that CA
(mutual TLS). The client side (`ClientTLS`) is part of the contract package: client/arbiter/tls.py.

Files are read when a server starts, so a certificate mounted later or rotated is picked up by
the next start; nothing is cached across processes. Paths only: key material never goes in a
config file.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # grpc is imported where credentials are made: settings stay light to import
    import grpc


class TLSSettings(BaseModel):
    """A service's TLS: off unless `cert_file` is set."""

    model_config = ConfigDict(extra="forbid")

    cert_file: str = Field(default="", description="PEM certificate chain; set with key_file to serve TLS")
    key_file: str = Field(default="", description="PEM private key of cert_file")
    client_ca_file: str = Field(
        default="", description="PEM CA bundle; when set, clients must present a certificate it signed (mTLS)"
    )

    @model_validator(mode="after")
    def _complete(self) -> TLSSettings:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("tls needs both cert_file and key_file (or neither)")
        if self.client_ca_file and not self.cert_file:
            raise ValueError("tls.client_ca_file (mTLS) needs cert_file and key_file too")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def uvicorn_ssl_options(tls: TLSSettings) -> dict[str, Any]:
    """uvicorn.Config keyword arguments for HTTPS (and client certificates under mTLS)."""
    if not tls.enabled:
        return {}
    options: dict[str, Any] = {"ssl_certfile": tls.cert_file, "ssl_keyfile": tls.key_file}
    if tls.client_ca_file:
        options.update(ssl_ca_certs=tls.client_ca_file, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return options


def grpc_server_credentials(tls: TLSSettings) -> grpc.ServerCredentials:
    """Credentials for `add_secure_port`; mTLS when `client_ca_file` is set."""
    import grpc

    return grpc.ssl_server_credentials(
        [(_read(tls.key_file), _read(tls.cert_file))],
        root_certificates=_read(tls.client_ca_file) if tls.client_ca_file else None,
        require_client_auth=bool(tls.client_ca_file),
    )
