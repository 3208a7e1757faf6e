"""Security properties by Kafka's names, and how listeners are read from them.

Plain tuples, not `muster.config.Property`, so `muster.config` can import this
module without a cycle; `muster.config` turns them into properties.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Kafka 2.x's ZooKeeper-era class name: same semantics, so it turns ACLs on too.
AUTHORIZER_CLASSES = (STANDARD_AUTHORIZER, "kafka.security.authorizer.AclAuthorizer")

# name, kind, default, doc
SECURITY_PROPERTIES: tuple[tuple[str, type, Any, str], ...] = (
    (
        "listener.security.protocol.map",
        str,
        ",".join(f"{p}:{p}" for p in PROTOCOLS),
        "Listener name -> PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    ),
    ("inter.broker.listener.name", str, "", "Accepted, unused: muster is one broker."),
    (
        "controller.listener.names",
        str,
        "",
        "KRaft controller listeners: left out of `listeners`, muster has no controller.",
    ),
    ("security.inter.broker.protocol", str, "PLAINTEXT", "Accepted, unused: one broker."),
    ("sasl.mechanism.inter.broker.protocol", str, "PLAIN", "Accepted, unused: one broker."),
    ("ssl.keystore.type", str, "PEM", "Only PEM: a key and its certificate chain."),
    ("ssl.keystore.location", str, "", "PEM file: private key, then the certificate chain."),
    ("ssl.keystore.key", str, "", "Inline PEM private key (instead of a keystore file)."),
    ("ssl.keystore.certificate.chain", str, "", "Inline PEM certificate chain."),
    ("ssl.keystore.password", str, "", "Accepted; a PEM key's password is ssl.key.password."),
    ("ssl.key.password", str, "", "Password of an encrypted PEM private key."),
    ("ssl.truststore.type", str, "PEM", "Only PEM: CA certificates."),
    ("ssl.truststore.location", str, "", "PEM file of CA certificates that sign client certs."),
    ("ssl.truststore.certificates", str, "", "Inline PEM CA certificates."),
    ("ssl.truststore.password", str, "", "Accepted, unused for PEM."),
    ("ssl.client.auth", str, "none", "required, requested or none: ask for client certs."),
    (
        "ssl.principal.mapping.rules",
        str,
        "DEFAULT",
        "Kafka's RULE:pattern/replacement/[LU] list mapping a certificate DN to a user.",
    ),
    ("ssl.enabled.protocols", str, "TLSv1.2,TLSv1.3", "TLS versions accepted."),
    ("ssl.endpoint.identification.algorithm", str, "https", "Accepted, unused by a broker."),
    (
        "sasl.enabled.mechanisms",
        str,
        ",".join(MECHANISMS),
        "SASL mechanisms offered (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).",
    ),
    (
        "connections.max.reauth.ms",
        int,
        0,
        "KIP-368: SASL sessions last this long, then must re-authenticate (0: forever).",
    ),
    (
        "authorizer.class.name",
        str,
        "",
        f"{STANDARD_AUTHORIZER} turns ACLs on (empty: everything allowed).",
    ),
    ("super.users", str, "", "Principals allowed everything: User:admin;User:ops."),
    (
        "allow.everyone.if.no.acl.found",
        bool,
        False,
        "With an authorizer: allow a resource nobody wrote an ACL for.",
    ),
)

_SECURITY_NAMES = {name for name, *_ in SECURITY_PROPERTIES}
_JAAS = re.compile(r"^listener\.name\.([^.]+)\.([A-Za-z0-9-]+)\.sasl\.jaas\.config$")
_PREFIXED = re.compile(r"^listener\.name\.([^.]+)\.(.+)$")


def listener_property(name: str) -> tuple[type, Any, str] | None:
    """Kafka's per-listener forms: `listener.name.<l>.<mech>.sasl.jaas.config`,
    `listener.name.<l>.ssl.*` and `listener.name.<l>.sasl.enabled.mechanisms`."""
    if _JAAS.match(name):
        return (str, "", "JAAS config of one listener's SASL mechanism.")
    m = _PREFIXED.match(name)
    if m and m.group(2) in _SECURITY_NAMES:
        kind, default, doc = next(p[1:] for p in SECURITY_PROPERTIES if p[0] == m.group(2))
        return (kind, default, doc)
    return None


class ListenerError(ValueError):
    pass


@dataclass(frozen=True)
class Listener:
    name: str  # upper case, as Kafka normalises it
    protocol: str
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _endpoints(raw: str) -> list[tuple[str, str, int]]:
    out = []
    for item in (s.strip() for s in raw.split(",")):
        if not item:
            continue
        name, sep, hostport = item.partition("://")
        host, colon, port = hostport.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ListenerError(f"listener {item!r}: expected NAME://HOST:PORT")
        out.append((name.strip().upper(), host.strip("[]"), int(port)))
    return out


def parse_listeners(config: Mapping[str, Any]) -> list[Listener]:
    """`listeners` resolved through `listener.security.protocol.map`."""
    protocol_map = {}
    for item in str(config["listener.security.protocol.map"]).split(","):
        name, sep, proto = item.strip().partition(":")
        if sep:
            protocol_map[name.strip().upper()] = proto.strip().upper()
    controllers = _controllers(config)
    listeners = []
    for name, host, port in _endpoints(config["listeners"]):
        if name in controllers:
            continue
        proto = protocol_map.get(name)
        if proto is None:
            raise ListenerError(
                f"listener {name} is not in listener.security.protocol.map ({protocol_map})"
            )
        if proto not in PROTOCOLS:
            raise ListenerError(f"listener {name}: unknown security protocol {proto}")
        listeners.append(Listener(name, proto, host, port))
    if len({li.name for li in listeners}) != len(listeners):
        raise ListenerError("each listener name may appear once in listeners")
    if not listeners:
        raise ListenerError("listeners is empty")
    return listeners


def parse_advertised(config: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """Listener name -> advertised host and port (0: the port actually bound)."""
    controllers = _controllers(config)
    return {
        name: (host, port)
        for name, host, port in _endpoints(config["advertised.listeners"])
        if name not in controllers
    }


def _controllers(config: Mapping[str, Any]) -> set[str]:
    """KRaft's controller listeners: they belong to Kafka's controller quorum,
    which muster has none of, so they are neither bound nor advertised."""
    return {
        n.strip().upper() for n in str(config["controller.listener.names"]).split(",") if n.strip()
    }


def listener_setting(config: Mapping[str, Any], listener: str, name: str) -> Any:
    """A property as one listener sees it: its `listener.name.<l>.` form wins."""
    prefixed = f"listener.name.{listener.lower()}.{name}"
    if prefixed in config:
        return config[prefixed]
    return config[name]
