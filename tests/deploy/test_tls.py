"""TLS end to end, with a CA and certificates made here (cryptography): HTTPS and gRPC over TLS on
a served grader, mutual TLS, the gateway's remote replicas over mTLS, the trainer adapter over
TLS, and the container health check against an HTTPS port."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from arbiter.client import ArbiterClient, ArbiterClientError
from arbiter.contract import Sample, Status
from arbiter.tls import ClientTLS
from services import catalog
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings

ROOT = Path(__file__).resolve().parents[2]
GOOD = "<think>reasoning</think> The answer is \\boxed{4}"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed nothing here: trusting it must fail


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return path


def _ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, common: str, usage: x509.ObjectIdentifier
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca_key, ca_cert = _ca("arbiter test CA")
    _, other = _ca("some other CA")
    server_key, server_cert = _leaf(ca_key, ca_cert, "arbiter service", ExtendedKeyUsageOID.SERVER_AUTH)
    client_key, client_cert = _leaf(ca_key, ca_cert, "arbiter trainer", ExtendedKeyUsageOID.CLIENT_AUTH)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (folder / "other-ca.pem").write_bytes(other.public_bytes(pem))
    (folder / "server.pem").write_bytes(server_cert.public_bytes(pem))
    (folder / "client.pem").write_bytes(client_cert.public_bytes(pem))
    return Pki(
        ca=folder / "ca.pem",
        server_cert=folder / "server.pem",
        server_key=_write_key(server_key, folder / "server-key.pem"),
        client_cert=folder / "client.pem",
        client_key=_write_key(client_key, folder / "client-key.pem"),
        other_ca=folder / "other-ca.pem",
    )


def tls_settings(pki: Pki, mutual: bool) -> dict[str, str]:
    tls = {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key)}
    if mutual:
        tls["client_ca_file"] = str(pki.ca)
    return tls


def client_tls(pki: Pki, with_cert: bool = True, ca: Path | None = None) -> ClientTLS:
    if with_cert:
        return ClientTLS(
            ca_file=str(ca or pki.ca), cert_file=str(pki.client_cert), key_file=str(pki.client_key)
        )
    return ClientTLS(ca_file=str(ca or pki.ca))


@pytest.fixture
async def tls_server(pki: Pki) -> AsyncIterator[GraderServer]:
    async with GraderServer(
        "reward_rules", rules_grader(), server_settings(tls=tls_settings(pki, False))
    ) as server:
        yield server


@pytest.fixture
async def mtls_server(pki: Pki) -> AsyncIterator[GraderServer]:
    async with GraderServer(
        "reward_rules", rules_grader(), server_settings(tls=tls_settings(pki, True))
    ) as server:
        yield server


BODY = {"query": [f"q {GOOD}"], "prompts": ["q "], "labels": [""]}


async def test_https_and_grpc_over_tls(tls_server: GraderServer, pki: Pki) -> None:
    assert tls_server.http_url.startswith("https://")
    async with httpx.AsyncClient(
        base_url=tls_server.http_url, verify=ssl.create_default_context(cafile=pki.ca)
    ) as http:
        reply = await http.post("/get_reward", json=BODY)
        assert reply.status_code == 200 and reply.json()["extra_logs"]["status/ok"] == [1.0]
    # plaintext HTTP to the TLS port gets no answer; a client trusting another CA refuses the server
    async with httpx.AsyncClient(base_url=tls_server.http_url.replace("https://", "http://")) as http:
        with pytest.raises(httpx.HTTPError):
            await http.post("/get_reward", json=BODY)
    async with httpx.AsyncClient(
        base_url=tls_server.http_url, verify=ssl.create_default_context(cafile=pki.other_ca)
    ) as http:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.get("/healthz")

    async with ArbiterClient(
        grpc_target=tls_server.grpc_target, tls=client_tls(pki, with_cert=False)
    ) as client:
        results = (await client.score([Sample(prompt="q", response=GOOD)])).results
        assert results[0].status is Status.OK
        assert await client.ready()
    async with ArbiterClient(grpc_target=tls_server.grpc_target, retries=0, timeout_s=5) as plain:
        with pytest.raises(ArbiterClientError, match="UNAVAILABLE"):
            await plain.info()
    wrong_ca = client_tls(pki, with_cert=False, ca=pki.other_ca)
    async with ArbiterClient(
        grpc_target=tls_server.grpc_target, tls=wrong_ca, retries=0, timeout_s=5
    ) as client:
        with pytest.raises(ArbiterClientError, match="UNAVAILABLE"):
            await client.info()


async def test_mutual_tls_requires_a_client_certificate(mtls_server: GraderServer, pki: Pki) -> None:
    with_cert = ssl.create_default_context(cafile=pki.ca)
    with_cert.load_cert_chain(pki.client_cert, pki.client_key)
    async with httpx.AsyncClient(base_url=mtls_server.http_url, verify=with_cert) as http:
        assert (await http.post("/get_reward", json=BODY)).status_code == 200
    async with httpx.AsyncClient(
        base_url=mtls_server.http_url, verify=ssl.create_default_context(cafile=pki.ca)
    ) as http:
        with pytest.raises(httpx.HTTPError):
            await http.post("/get_reward", json=BODY)

    async with ArbiterClient(grpc_target=mtls_server.grpc_target, tls=client_tls(pki)) as client:
        assert (await client.score([Sample(prompt="q", response=GOOD)])).results[0].status is Status.OK
    async with ArbiterClient(
        grpc_target=mtls_server.grpc_target, tls=client_tls(pki, with_cert=False), retries=0, timeout_s=5
    ) as client:
        with pytest.raises(ArbiterClientError, match="UNAVAILABLE"):
            await client.info()
    # the same client through HTTP: ArbiterClient's https side presents the certificate too
    async with ArbiterClient(http_url=mtls_server.http_url, tls=client_tls(pki)) as client:
        assert (await client.score([Sample(prompt="q", response=GOOD)])).results[0].status is Status.OK


async def test_gateway_reaches_remote_replicas_over_mutual_tls(mtls_server: GraderServer, pki: Pki) -> None:
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": 0,
                "tls": tls_settings(pki, False),  # and serves TLS itself
                "services": {
                    "reward_rules": {
                        "replicas": [mtls_server.grpc_target],
                        "tls": client_tls(pki).model_dump(),
                    }
                },
                "recipes": {"default": {"components": {"rules": {"grader": "reward_rules", "fallback": -1}}}},
            }
        }
    )
    async with (
        catalog.make_server("gateway", settings) as gateway,
        ArbiterClient(grpc_target=gateway.grpc_target, tls=client_tls(pki, with_cert=False)) as client,
    ):
        results = (await client.score([Sample(prompt="q", response=f"{GOOD} {i}") for i in range(4)])).results
    for result in results:
        assert result.status is Status.OK and result.logs["component/rules/ok"] == 1.0, result

    # without the client certificate the replica refuses the gateway: every sample a flagged fallback
    settings.gateway.services["reward_rules"].tls = client_tls(pki, with_cert=False)
    settings.gateway.deadline_s = 3
    async with (
        catalog.make_server("gateway", settings) as gateway,
        ArbiterClient(grpc_target=gateway.grpc_target, tls=client_tls(pki, with_cert=False)) as client,
    ):
        results = (await client.score([Sample(prompt="q", response=f"{GOOD} x")])).results
    assert results[0].logs["component/rules/ok"] == 0.0 and results[0].status is Status.UPSTREAM_ERROR


async def test_trainer_adapter_over_tls(tls_server: GraderServer, pki: Pki) -> None:
    from arbiter.adapters.gateway import GatewayConnection
    from arbiter.adapters.settings import AdapterSettings

    env = {"ARBITER_GATEWAY": tls_server.grpc_target, "ARBITER_GATEWAY_CA_FILE": str(pki.ca)}
    settings = AdapterSettings.from_env(env)
    assert settings.tls is not None and settings.tls.ca_file == str(pki.ca)
    assert AdapterSettings.from_env({"ARBITER_GATEWAY": "h:1"}).tls is None
    assert AdapterSettings.from_env({"ARBITER_GATEWAY_TLS": "1"}).tls == ClientTLS()
    connection = GatewayConnection(settings)
    try:
        results = await asyncio.to_thread(connection.score, [Sample(prompt="q", response=GOOD)])
    finally:
        connection.close()
    assert results[0].status is Status.OK


async def test_the_container_healthcheck_speaks_https(
    tls_server: GraderServer, pki: Pki, tmp_path: Path
) -> None:

    config = tmp_path / "arbiter.yaml"
    config.write_text(f"reward_rules:\n  tls: {{cert_file: {pki.server_cert}, key_file: {pki.server_key}}}\n")
    env = {"ARBITER_CONFIG": str(config), "ARBITER_REWARD_RULES__HTTP_PORT": str(tls_server.http_port)}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(ROOT / "deploy/healthcheck.py"), "reward_rules"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
