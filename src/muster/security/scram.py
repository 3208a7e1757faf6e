"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer does it.

Pure: credentials come from a lookup function, the server nonce from the
caller; tokens in, tokens out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from muster.security.errors import AuthenticationFailed

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramMechanism: 4096 minimum, 16384 maximum.
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
# KIP-554 wire codes of the mechanisms.
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_CODES.items()}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(alg: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, alg).digest()


def credential_from_salted(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """What is kept of a password: StoredKey and ServerKey, never the password."""
    alg = HASHES[mechanism]
    client_key = _hmac(alg, salted_password, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(alg, client_key).digest(),
        server_key=_hmac(alg, salted_password, b"Server Key"),
        iterations=iterations,
    )


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def credential_from_password(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted(mechanism, salt, salted, iterations)


def password_matches(mechanism: str, cred: ScramCredential, password: str) -> bool:
    """PLAIN against the SCRAM store: recompute StoredKey from the password."""
    again = credential_from_password(mechanism, password, cred.iterations, cred.salt)
    return hmac.compare_digest(again.stored_key, cred.stored_key)


def _attrs(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationFailed(f"malformed SCRAM attribute {part!r}")
        out[key] = value
    return out


def _saslname(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise AuthenticationFailed("invalid SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        nonce: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.alg = HASHES[mechanism]
        self._lookup = lookup
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._step = 0
        self.username: str | None = None
        self.complete = False
        self._cred: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM message is not UTF-8") from None
        if self._step == 0:
            self._step = 1
            return self._first(text)
        if self._step == 1:
            self._step = 2
            return self._final(text)
        raise AuthenticationFailed("SCRAM exchange already complete")

    def _first(self, text: str) -> bytes:
        # gs2 header: n|y,[a=authzid], then the bare message
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise AuthenticationFailed("invalid SCRAM client-first message")
        authzid = parts[1]
        self._client_first_bare = parts[2]
        attrs = _attrs(parts[2])
        if "n" not in attrs or "r" not in attrs or "m" in attrs:
            raise AuthenticationFailed("invalid SCRAM client-first message")
        user = _saslname(attrs["n"])
        if authzid and _saslname(authzid.removeprefix("a=")) != user:
            raise AuthenticationFailed("authorization id differs from the user name")
        cred = self._lookup(user, self.mechanism)
        if cred is None:
            raise AuthenticationFailed("unknown user")
        self.username, self._cred = user, cred
        self._combined = attrs["r"] + self._nonce
        salt = base64.b64encode(cred.salt).decode()
        self._server_first = f"r={self._combined},s={salt},i={cred.iterations}"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._cred is not None
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise AuthenticationFailed("SCRAM client-final without proof")
        attrs = _attrs(without_proof)
        # Kafka checks endsWith, not equality: older librdkafka (kcat's)
        # repeats its own nonce in front of the combined one.
        if not attrs.get("r", "").endswith(self._combined):
            raise AuthenticationFailed("SCRAM nonce mismatch")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}"
        signature = _hmac(self.alg, self._cred.stored_key, auth_message.encode())
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise AuthenticationFailed("SCRAM proof is not base64") from None
        if len(proof) != len(signature):
            raise AuthenticationFailed("invalid credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self.alg, client_key).digest(), self._cred.stored_key
        ):
            raise AuthenticationFailed("invalid credentials")
        server_signature = _hmac(self.alg, self._cred.server_key, auth_message.encode())
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    """The client side, for muster's own client and for tests."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        self.mechanism, self.alg = mechanism, HASHES[mechanism]
        self.username, self.password = username, password
        self._nonce = nonce or secrets.token_urlsafe(24)
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._first_bare = f"n={name},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = _attrs(server_first.decode())
        if not attrs.get("r", "").startswith(self._nonce):
            raise AuthenticationFailed("server nonce does not extend ours")
        salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = _hmac(self.alg, salted, b"Client Key")
        stored_key = hashlib.new(self.alg, client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{self._first_bare},{server_first.decode()},{without_proof}".encode()
        signature = _hmac(self.alg, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self.alg, salted, b"Server Key")
        self._server_signature = _hmac(self.alg, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attrs(server_final.decode())
        if "e" in attrs:
            raise AuthenticationFailed(f"server refused: {attrs['e']}")
        if base64.b64decode(attrs.get("v", "")) != self._server_signature:
            raise AuthenticationFailed("server signature does not match")
