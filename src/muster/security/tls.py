"""A listener's `ssl.SSLContext` from Kafka's PEM keystore/truststore properties,
and the principal a client certificate stands for."""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from muster.security.principal import ANONYMOUS, PrincipalMapper
from muster.security.properties import listener_setting

_CLIENT_AUTH = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(ValueError):
    pass


@contextlib.contextmanager
def _pem_file(text: str) -> Iterator[str]:
    """`load_cert_chain` reads files only: inline PEM goes through a private
    temporary file that is gone before the broker serves."""
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text.replace("\\n", "\n"))
        yield path
    finally:
        os.unlink(path)


def server_context(config: Mapping[str, Any], listener: str) -> ssl.SSLContext:
    def get(name: str) -> Any:
        return listener_setting(config, listener, name)

    for kind in ("ssl.keystore.type", "ssl.truststore.type"):
        if str(get(kind)).upper() != "PEM":
            raise TlsConfigError(f"{kind}={get(kind)}: muster reads PEM only")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [
        _VERSIONS[v.strip()]
        for v in get("ssl.enabled.protocols").split(",")
        if v.strip() in _VERSIONS
    ]
    if not versions:
        raise TlsConfigError(f"ssl.enabled.protocols={get('ssl.enabled.protocols')}: none known")
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    password = get("ssl.key.password") or None
    location, key, chain = (
        get("ssl.keystore.location"),
        get("ssl.keystore.key"),
        get("ssl.keystore.certificate.chain"),
    )
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif key and chain:
            with _pem_file(key) as keyfile, _pem_file(chain) as certfile:
                ctx.load_cert_chain(certfile, keyfile, password=password)
        else:
            raise TlsConfigError(
                f"listener {listener}: set ssl.keystore.location, or ssl.keystore.key "
                "and ssl.keystore.certificate.chain"
            )
        truststore, inline = get("ssl.truststore.location"), get("ssl.truststore.certificates")
        if truststore:
            ctx.load_verify_locations(cafile=truststore)
        elif inline:
            ctx.load_verify_locations(cadata=inline.replace("\\n", "\n"))
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"listener {listener}: {exc}") from exc
    auth = str(get("ssl.client.auth")).lower()
    if auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth={auth}: expected required, requested or none")
    if auth != "none" and not (truststore or inline):
        raise TlsConfigError(f"ssl.client.auth={auth} needs ssl.truststore.location")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


def subject_dn(der: bytes) -> str:
    """The subject as Java's X500Principal.getName() prints it (RFC 2253)."""
    # imported here: only a TLS client certificate needs it, and cryptography's
    # x509 costs a broker without TLS listeners ~40 ms of its start
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def peer_principal(ssl_object: ssl.SSLObject | None, mapper: PrincipalMapper) -> str:
    """User:<mapped DN> for a client certificate; User:ANONYMOUS without one."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return "User:" + mapper.name(subject_dn(der))
