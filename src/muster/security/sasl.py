"""PLAIN (RFC 4616) and the JAAS config Kafka reads PLAIN users from. Pure."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable

from muster.security.errors import AuthenticationFailed

_JAAS_OPTION = re.compile(r'([A-Za-z_][\w.-]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def jaas_users(config: str) -> dict[str, str]:
    """`user_alice="alice-secret"` entries of a PlainLoginModule JAAS config."""
    if config.strip() and PLAIN_MODULE not in config:
        raise ValueError(f"PLAIN needs {PLAIN_MODULE} in its sasl.jaas.config")
    options = {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(config)}
    return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


class PlainServer:
    """One message `authzid NUL user NUL password`; `verify(user, password)`
    says whether the pair is good."""

    mechanism = "PLAIN"

    def __init__(self, verify: Callable[[str, str], bool]) -> None:
        self._verify = verify
        self.username: str | None = None
        self.complete = False

    def step(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("PLAIN exchange already complete")
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("invalid PLAIN message: expected authzid NUL user NUL pass")
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed("PLAIN message is not UTF-8") from None
        if not user or not password:
            raise AuthenticationFailed("PLAIN needs a user name and a password")
        if authzid and authzid != user:
            raise AuthenticationFailed("authorization id differs from the user name")
        if not self._verify(user, password):
            raise AuthenticationFailed("invalid credentials")
        self.username = user
        self.complete = True
        return b""


def plain_verifier(
    users: dict[str, str], scram_check: Callable[[str, str], bool] | None = None
) -> Callable[[str, str], bool]:
    """JAAS users first, then the SCRAM store (a password re-derived and compared)."""

    def verify(user: str, password: str) -> bool:
        expected = users.get(user)
        if expected is not None:
            return hmac.compare_digest(expected.encode(), password.encode())
        return scram_check is not None and scram_check(user, password)

    return verify
