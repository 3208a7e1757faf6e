"""SCRAM server and client against RFC 7677's test vector and each other."""

from __future__ import annotations

import base64

import pytest

from muster.security.scram import (
    AuthenticationFailed,
    ScramClient,
    ScramServer,
    credential_from_password,
    password_matches,
)

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def test_rfc7677_exchange() -> None:
    cred = credential_from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT)
    server = ScramServer(
        "SCRAM-SHA-256",
        lambda u, m: cred if u == "user" else None,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_and_server_agree_and_wrong_password_fails(mech: str) -> None:
    cred = credential_from_password(mech, "s3cret")
    assert cred.iterations >= 4096 and len(cred.salt) >= 16
    lookup = {("a,b=c", mech): cred}.get

    client = ScramClient(mech, "a,b=c", "s3cret")
    server = ScramServer(mech, lambda u, m: lookup((u, m)))
    assert b"n=a=2Cb=3Dc" in client.first()
    client.verify(server.step(client.final(server.step(client.first()))))
    assert server.username == "a,b=c"

    wrong = ScramClient(mech, "a,b=c", "guess")
    server = ScramServer(mech, lambda u, m: lookup((u, m)))
    challenge = server.step(wrong.first())
    with pytest.raises(AuthenticationFailed):
        server.step(wrong.final(challenge))
    assert not server.complete


def test_unknown_user_tampered_nonce_and_authzid_fail() -> None:
    cred = credential_from_password("SCRAM-SHA-512", "pw")
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-512", lambda u, m: None).step(b"n,,n=nobody,r=abc")
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-512", lambda u, m: cred).step(b"n,a=other,n=alice,r=abc")
    server = ScramServer("SCRAM-SHA-512", lambda u, m: cred)
    client = ScramClient("SCRAM-SHA-512", "alice", "pw")
    challenge = server.step(client.first())
    final = client.final(challenge).replace(b"r=", b"r=X", 1)
    with pytest.raises(AuthenticationFailed):
        server.step(final)


def test_stored_credential_checks_a_plain_password_without_keeping_it() -> None:
    cred = credential_from_password("SCRAM-SHA-256", "hunter2")
    assert b"hunter2" not in cred.salt + cred.stored_key + cred.server_key
    assert password_matches("SCRAM-SHA-256", cred, "hunter2")
    assert not password_matches("SCRAM-SHA-256", cred, "hunter3")
