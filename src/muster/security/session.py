"""One connection's authentication state, consulted before every request.

Pure, as Kafka's SaslServerAuthenticator is laid out: before authentication a
SASL listener serves ApiVersions and SaslHandshake, then only SaslAuthenticate
(or raw tokens after a v0 handshake); afterwards everything, until the session
lifetime (KIP-368) ends, when only a new SaslHandshake is accepted.
Time is an argument.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from muster.security.errors import AuthenticationFailed
from muster.security.principal import ANONYMOUS

log = logging.getLogger("muster.security")

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
UNAUTHENTICATED_MAX_RECEIVE = 524288
NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58


class SaslServer(Protocol):
    mechanism: str
    username: str | None
    complete: bool

    def step(self, token: bytes) -> bytes: ...


@dataclass(frozen=True)
class ListenerSecurity:
    """What a listener demands: the connection gets one of these from the broker."""

    name: str
    protocol: str
    mechanisms: tuple[str, ...] = ()
    make_server: Callable[[str], SaslServer] | None = None
    reauth_ms: int = 0

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


class Rejected(Exception):
    """The request may not be served: the connection closes (reason logged)."""


class Session:
    def __init__(self, listener: ListenerSecurity, principal: str = ANONYMOUS) -> None:
        self.listener = listener
        self.principal = principal
        self.authenticated = not listener.sasl
        self._stage = "handshake" if listener.sasl else "done"
        self._server: SaslServer | None = None
        self.mechanism: str | None = None
        self.raw_tokens = False  # after a v0 handshake: bare tokens, no Kafka headers
        self.expires_at_ms: int | None = None
        self.close_after_answer: str | None = None

    def frame_limit(self, limit: int) -> int:
        """Kafka's sasl.server.max.receive.size: small frames until authenticated."""
        return limit if self.authenticated else min(limit, UNAUTHENTICATED_MAX_RECEIVE)

    def admit(self, api_key: int, now_ms: int) -> None:
        """Raises Rejected when this request may not be served now."""
        stage = self._stage
        if stage == "done":
            if self.expires_at_ms is not None and now_ms >= self.expires_at_ms:
                if api_key != SASL_HANDSHAKE:
                    raise Rejected(f"{self.principal}: SASL session expired (KIP-368)")
            elif api_key == SASL_HANDSHAKE and self.listener.sasl and self.expires_at_ms is None:
                raise Rejected("SaslHandshake on an authenticated connection")
            return
        if stage == "handshake" and api_key in (API_VERSIONS, SASL_HANDSHAKE):
            return
        if stage == "authenticate" and api_key == SASL_AUTHENTICATE:
            return
        raise Rejected(f"api {api_key} before SASL authentication completed")

    def handshake(self, mechanism: str, version: int) -> tuple[int, list[str]]:
        offered = list(self.listener.mechanisms)
        reauth = self._stage == "done"
        if mechanism not in offered or (reauth and mechanism != self.mechanism):
            self.close_after_answer = f"unsupported SASL mechanism {mechanism!r}"
            return UNSUPPORTED_SASL_MECHANISM, offered
        assert self.listener.make_server is not None
        self._server = self.listener.make_server(mechanism)
        self.mechanism = mechanism
        self._stage = "authenticate"
        self.raw_tokens = version == 0
        return NONE, offered

    def authenticate(self, token: bytes, now_ms: int) -> tuple[int, str | None, bytes, int]:
        """(error code, message, reply token, session lifetime ms)."""
        assert self._server is not None and self.mechanism is not None
        try:
            reply = self._server.step(token)
            if self._server.complete:
                principal = "User:" + (self._server.username or "")
                if self.authenticated and principal != self.principal:
                    raise AuthenticationFailed(
                        f"cannot change principal from {self.principal} to {principal}"
                    )
                self.principal = principal
        except AuthenticationFailed as exc:
            what = "re-authentication" if self.authenticated else "authentication"
            log.info(
                "%s failed on listener %s with %s: %s",
                what,
                self.listener.name,
                self.mechanism,
                exc,
            )
            self.close_after_answer = str(exc)
            # Kafka never says why (the user may not exist): one fixed message.
            return (
                SASL_AUTHENTICATION_FAILED,
                f"Authentication failed during {what} due to invalid credentials "
                f"with SASL mechanism {self.mechanism}",
                b"",
                0,
            )
        lifetime = 0
        if self._server.complete:
            self.authenticated = True
            self._stage = "done"
            self.raw_tokens = False
            if self.listener.reauth_ms > 0:
                lifetime = self.listener.reauth_ms
                self.expires_at_ms = now_ms + lifetime
            log.debug("authenticated %s with %s", self.principal, self.mechanism)
        return NONE, None, reply, lifetime
