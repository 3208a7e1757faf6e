"""Throw-away CA and certificates for local TLS (tests, demos, a laptop).

    python -m muster.security.certs OUT_DIR [--client alice --client bob]

writes, in OUT_DIR:
  ca.pem                       the CA certificate (truststore for both sides)
  broker.pem                   broker key then certificate chain (ssl.keystore.location)
  broker-key.pem, broker-cert.pem   the same, split (inline-PEM properties, kcat)
  client-NAME.pem / -key.pem / -cert.pem   a client certificate, subject CN=NAME,OU=clients,O=muster

Never use these outside a test: the CA key is kept next to them, unencrypted.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_DAY = datetime.timedelta(days=1)


def _name(cn: str, ou: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "muster"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    hosts: tuple[str, ...] = (),
    days: int = 30,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + days * _DAY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if hosts:
        names: list[x509.GeneralName] = []
        for h in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                names.append(x509.DNSName(h))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certs(
    out: Path,
    clients: tuple[str, ...] = (),
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
    key_password: str | None = None,
) -> Path:
    """Writes the files listed in the module docstring; returns `out`."""
    out.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("muster test CA", "ca")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    (out / "ca.pem").write_bytes(_cert_pem(ca))
    (out / "ca-key.pem").write_bytes(_key_pem(ca_key))
    entities = [("broker", _name(hosts[0], "brokers"), hosts)]
    entities += [(f"client-{c}", _name(c, "clients"), ()) for c in clients]
    for stem, subject, sans in entities:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(subject, key, ca_name, ca_key, hosts=sans)
        password = key_password if stem == "broker" else None
        key_pem, chain = _key_pem(key, password), _cert_pem(cert) + _cert_pem(ca)
        (out / f"{stem}.pem").write_bytes(key_pem + chain)
        (out / f"{stem}-key.pem").write_bytes(key_pem)
        (out / f"{stem}-cert.pem").write_bytes(chain)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--client", action="append", default=[], help="client cert CN")
    parser.add_argument("--host", action="append", default=[], help="broker host names")
    args = parser.parse_args(argv)
    hosts = tuple(args.host) or ("localhost", "127.0.0.1")
    make_certs(args.out, tuple(args.client), hosts)
    print(f"wrote CA, broker and {len(args.client)} client certificate(s) to {args.out}")


if __name__ == "__main__":
    main()
