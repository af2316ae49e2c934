"""TLS for every client of the contract: HTTPS and gRPC over TLS, optional mTLS.

`ClientTLS` (the gateway's remote replicas, the trainer adapters, `arbiter check`/`score --url`):
`ca_file` is the bundle the server's certificate is checked against (empty: the system's),
`cert_file` + `key_file` the client's own certificate for mTLS, `server_name` the name to check
when the address is not the one in the certificate (an IP, a DNS name of many replicas). The
server side is services/common/tls.py.

Files are read when a client connects, so a certificate mounted later or rotated is picked up
by the next connection; nothing is cached across processes. Paths only: key material never goes
in a config file.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # grpc is imported where credentials are made: settings stay light to import
    import grpc


class ClientTLS(BaseModel):
    """How a client checks a TLS server and, for mTLS, proves who it is."""

    model_config = ConfigDict(extra="forbid")

    ca_file: str = Field(
        default="", description="PEM CA bundle for the server's certificate; empty: the system's"
    )
    cert_file: str = Field(default="", description="PEM client certificate (mTLS)")
    key_file: str = Field(default="", description="PEM private key of cert_file")
    server_name: str = Field(default="", description="name to verify instead of the address's host")

    @model_validator(mode="after")
    def _complete(self) -> ClientTLS:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("a client certificate needs both cert_file and key_file (or neither)")
        return self


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def grpc_channel_credentials(tls: ClientTLS) -> grpc.ChannelCredentials:
    import grpc

    return grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca_file) if tls.ca_file else None,
        private_key=_read(tls.key_file) if tls.key_file else None,
        certificate_chain=_read(tls.cert_file) if tls.cert_file else None,
    )


def grpc_channel_options(tls: ClientTLS) -> list[tuple[str, Any]]:
    return [("grpc.ssl_target_name_override", tls.server_name)] if tls.server_name else []


def ssl_context(tls: ClientTLS) -> ssl.SSLContext:
    """A verifying client context (httpx, aiohttp, urllib) with the CA bundle and client certificate."""
    context = ssl.create_default_context(cafile=tls.ca_file or None)
    if tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context
