"""Secured brokers for wire tests: throw-away certificates, Kafka-style
properties, client configurations per client library, and a raw client that
speaks the SASL handshake itself (for the negative tests)."""

from __future__ import annotations

import socket
import ssl
import struct
from pathlib import Path
from typing import Any

from muster.protocol.client_codec import decode_response, encode_request
from muster.security.certs import make_certs

ADMIN, ADMIN_PW = "admin", "admin-secret"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="{ADMIN}" password="{ADMIN_PW}" user_{ADMIN}="{ADMIN_PW}" '
    'user_alice="alice-secret" user_bob="bob-secret";'
)
LISTENERS = {
    "PLAINTEXT": "PLAINTEXT",
    "SSL": "SSL",
    "SASL_SSL": "SASL_SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
}


def secured_settings(certs: Path, **extra: str) -> dict[str, str]:
    """Kafka server.properties for LISTENERS: mutual TLS required on SSL,
    PLAIN users from JAAS on both SASL listeners."""
    return {
        "ssl.keystore.location": str(certs / "broker.pem"),
        "ssl.truststore.location": str(certs / "ca.pem"),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=clients.*$/$1/,DEFAULT",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        **extra,
    }


def certificates(root: Path) -> Path:
    return make_certs(root / "certs", ("alice", "bob", "admin"))


# ---- client configurations, one dialect per library -------------------------


def librdkafka_conf(
    certs: Path, mechanism: str | None, user: str = "", password: str = "", cert: str = ""
) -> dict[str, Any]:
    """confluent-kafka (and kcat -X) properties for SASL_SSL, or mutual TLS."""
    conf: dict[str, Any] = {"ssl.ca.location": str(certs / "ca.pem")}
    if mechanism is None:
        conf["security.protocol"] = "SSL"
        if cert:
            conf["ssl.certificate.location"] = str(certs / f"client-{cert}-cert.pem")
            conf["ssl.key.location"] = str(certs / f"client-{cert}-key.pem")
        return conf
    conf.update(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
    )
    return conf


def python_client_conf(certs: Path, mechanism: str, user: str, password: str) -> dict[str, Any]:
    """kafka-python and aiokafka keyword arguments for SASL_SSL."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "ssl_context": ctx,
    }


# ---- a raw client for the negative tests ----------------------------------------


class Closed(Exception):
    """The broker closed the connection instead of answering."""


class RawClient:
    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock: socket.socket = (
            tls.wrap_socket(sock, server_hostname="localhost") if tls else sock
        )
        self.correlation = 0

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except (ConnectionResetError, ssl.SSLError) as exc:
                raise Closed(str(exc)) from exc
            if not chunk:
                raise Closed("connection closed")
            data += chunk
        return data

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.correlation += 1
        try:
            self.sock.sendall(encode_request(api_key, version, self.correlation, "raw", body))
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise Closed(str(exc)) from exc
        (size,) = struct.unpack(">i", self._recv(4))
        _corr, response = decode_response(api_key, version, self._recv(size))
        return response

    def plain_login(self, user: str, password: str) -> Any:
        handshake = self.call(17, 1, {"mechanism": "PLAIN"})
        assert handshake.error_code == 0, handshake
        return self.call(36, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})

    def close(self) -> None:
        self.sock.close()


def tls_context(certs: Path, cert: str = "") -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if cert:
        ctx.load_cert_chain(certs / f"client-{cert}-cert.pem", certs / f"client-{cert}-key.pem")
    return ctx


def add_scram_user(
    bootstrap: str, certs: Path, user: str, password: str, iterations: int = 4096
) -> None:
    """A SCRAM-SHA-512 user created over the wire by the JAAS admin, as
    confluent-kafka's AdminClient.alter_user_scram_credentials does it."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(
        {"bootstrap.servers": bootstrap, **librdkafka_conf(certs, "PLAIN", ADMIN, ADMIN_PW)}
    )
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(15)
