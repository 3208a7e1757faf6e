"""The client's side of TLS and SASL, by librdkafka's property names:
`security.protocol`, `sasl.mechanism`, `sasl.username`, `sasl.password`,
`ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`,
`ssl.key.password`, `ssl.endpoint.identification.algorithm`."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.client.errors import ConfigError, KafkaError
from muster.security.scram import AuthenticationFailed, ScramClient

KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_FAILED = 58


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str = "GSSAPI"  # librdkafka's and Java's default, which muster lacks
    username: str = ""
    password: str = ""
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    check_hostname: bool = True

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ClientSecurity:
        def get(key: str) -> str | None:
            value = conf.get(key)
            return None if value is None or value == "" else str(value)

        protocol = (get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ConfigError(f"security.protocol={protocol}: expected one of {PROTOCOLS}")
        mechanism = (get("sasl.mechanism") or "GSSAPI").upper()
        if protocol.startswith("SASL") and mechanism not in MECHANISMS:
            raise ConfigError(f"sasl.mechanism={mechanism}: muster's client speaks {MECHANISMS}")
        algorithm = (get("ssl.endpoint.identification.algorithm") or "https").lower()
        return cls(
            protocol,
            mechanism,
            get("sasl.username") or "",
            get("sasl.password") or "",
            get("ssl.ca.location"),
            get("ssl.certificate.location"),
            get("ssl.key.location"),
            get("ssl.key.password"),
            algorithm == "https",
        )

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.protocol not in ("SSL", "SASL_SSL"):
            return None
        try:
            ctx = ssl.create_default_context(cafile=self.ca_location)
            ctx.check_hostname = self.check_hostname
            if self.certificate_location:
                ctx.load_cert_chain(
                    self.certificate_location, self.key_location, password=self.key_password
                )
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"TLS settings: {exc}") from exc
        return ctx


def sasl_tokens(security: ClientSecurity) -> Any:
    """A generator: send() it each server token, it yields the next client
    token; it returns when the exchange is complete (raising on a bad server)."""
    if security.mechanism == "PLAIN":
        yield f"\0{security.username}\0{security.password}".encode()
        return
    client = ScramClient(security.mechanism, security.username, security.password)
    server_first = yield client.first()
    server_final = yield client.final(server_first)
    try:
        client.verify(server_final)
    except AuthenticationFailed as exc:
        raise KafkaError(f"SCRAM: {exc}", SASL_FAILED) from exc
