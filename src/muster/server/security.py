"""The broker's security wiring: listeners with their TLS contexts and SASL
servers, the durable SCRAM and ACL stores, and the authorizer with its audit
log. Handlers reach it as `state.services.security`."""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from muster.config import BrokerConfig, ConfigError
from muster.security import sasl as plain
from muster.security.principal import PrincipalMapper
from muster.security.properties import (
    AUTHORIZER_CLASSES,
    MECHANISMS,
    Listener,
    ListenerError,
    listener_setting,
    parse_advertised,
    parse_listeners,
)
from muster.security.session import ListenerSecurity, SaslServer
from muster.security.store import AclStore, CredentialStore

if TYPE_CHECKING:
    # SCRAM, the authorizer and TLS contexts are imported when a listener or
    # the configuration needs them: a plaintext broker without ACLs starts
    # without them (tests/server/test_start_imports.py)
    from muster.security.acl import Authorizer, Operation, ResourceType
    from muster.server.state import BrokerState

audit = logging.getLogger("muster.audit")


@dataclass
class ServedListener:
    listener: Listener
    security: ListenerSecurity
    ssl: ssl.SSLContext | None
    mapper: PrincipalMapper


class BrokerSecurity:
    def __init__(self, config: BrokerConfig, data_dir: Path | None) -> None:
        try:
            self.listeners = parse_listeners(config)
            advertised = parse_advertised(config)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from exc
        unknown = set(advertised) - {li.name for li in self.listeners}
        if unknown:
            raise ConfigError(f"advertised.listeners names unknown listeners: {sorted(unknown)}")
        self.advertised = {
            li.name: advertised.get(li.name, (li.host, li.port)) for li in self.listeners
        }
        root = data_dir / "security" if data_dir is not None else None
        self.credentials = CredentialStore(root / "scram-credentials.json" if root else None)
        self.acls = AclStore(root / "acls.json" if root else None)
        name = str(config["authorizer.class.name"]).strip()
        if name and name not in AUTHORIZER_CLASSES:
            raise ConfigError(
                f"authorizer.class.name={name}: muster implements {AUTHORIZER_CLASSES[0]}"
            )
        self.authorizer: Authorizer | None = None
        if name:
            from muster.security.acl import Authorizer

            supers = [s.strip() for s in str(config["super.users"]).split(";") if s.strip()]
            self.authorizer = Authorizer(
                self.acls.bindings, supers, bool(config["allow.everyone.if.no.acl.found"])
            )
        self.served = [self._serve(config, li) for li in self.listeners]

    def _serve(self, config: BrokerConfig, li: Listener) -> ServedListener:
        context = _tls_context(config, li.name) if li.tls else None
        try:
            mapper = PrincipalMapper(
                listener_setting(config, li.name, "ssl.principal.mapping.rules")
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        mechs = tuple(
            m.strip().upper()
            for m in str(listener_setting(config, li.name, "sasl.enabled.mechanisms")).split(",")
            if m.strip()
        )
        if li.sasl:
            bad = [m for m in mechs if m not in MECHANISMS]
            if bad:
                raise ConfigError(f"sasl.enabled.mechanisms: muster does not implement {bad}")
        users: dict[str, str] = {}
        jaas_key = f"listener.name.{li.name.lower()}.plain.sasl.jaas.config"
        if li.sasl and "PLAIN" in mechs and jaas_key in config:
            try:
                users = plain.jaas_users(config[jaas_key])
            except ValueError as exc:
                raise ConfigError(f"{jaas_key}: {exc}") from exc
        security = ListenerSecurity(
            name=li.name,
            protocol=li.protocol,
            mechanisms=mechs if li.sasl else (),
            make_server=self._sasl_factory(users),
            reauth_ms=int(listener_setting(config, li.name, "connections.max.reauth.ms")),
        )
        return ServedListener(li, security, context, mapper)

    def _sasl_factory(self, users: dict[str, str]):  # type: ignore[no-untyped-def]
        def scram_check(user: str, password: str) -> bool:
            from muster.security import scram

            for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
                cred = self.credentials.get(user, mech)
                if cred is not None:
                    return scram.password_matches(mech, cred, password)
            return False

        verify = plain.plain_verifier(users, scram_check)

        def make(mechanism: str) -> SaslServer:
            if mechanism == "PLAIN":
                return plain.PlainServer(verify)
            from muster.security import scram

            return scram.ScramServer(mechanism, self.credentials.get)

        return make

    # ---- authorization -------------------------------------------------

    def allowed(
        self,
        principal: str,
        host: str,
        op: Operation,
        rtype: ResourceType,
        name: str,
        api: str,
        log_denial: bool = True,
    ) -> bool:
        if self.authorizer is None:
            return True
        decision = self.authorizer.authorize(principal, host, op, rtype, name)
        if not decision.allowed and log_denial:
            audit.info(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s "
                "for request = %s based on %s",
                principal,
                op.name,
                host,
                rtype.name,
                name,
                api,
                decision.rule,
            )
        return decision.allowed


def _tls_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    from muster.security.tls import TlsConfigError, server_context

    try:
        return server_context(config, listener)
    except (TlsConfigError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


def advertised_endpoint(state: BrokerState, listener: str) -> tuple[str, int]:
    """Where clients of `listener` are told to connect (Metadata, FindCoordinator):
    Kafka advertises the listener a request came in on."""
    services = state.services
    security = services.security
    if security is None:
        host, port = state.config.advertised
        return host, port or services.bound_port or port
    name = listener if listener in security.advertised else security.listeners[0].name
    host, port = security.advertised[name]
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return host, port or services.bound_ports.get(name, port)
