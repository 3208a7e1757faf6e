"""ssl.principal.mapping.rules (Kafka's SslPrincipalMapperTest cases), PLAIN,
JAAS parsing, and the per-connection authentication gate."""

from __future__ import annotations

import pytest

from muster.security.principal import NoMatchingRule, PrincipalMapper
from muster.security.sasl import PlainServer, jaas_users, plain_verifier
from muster.security.session import ListenerSecurity, Rejected, Session

RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
    "DEFAULT"
)


def test_mapping_rules_as_kafka() -> None:
    m = PrincipalMapper(RULES)
    assert m.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "Duke"
    assert m.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US") == (
        "duke@javasoft"
    )
    assert m.name("cn=duke,O=Org") == "DUKE"
    assert PrincipalMapper("DEFAULT").name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(NoMatchingRule):
        PrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=only")
    for bad in ("RULE:nope", "DEFAULT,RULE:x/y", "BOGUS"):
        with pytest.raises(ValueError):
            PrincipalMapper(bad)


JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="al\\"ice";'
)


def test_jaas_users_and_plain() -> None:
    users = jaas_users(JAAS)
    assert users == {"admin": "admin-secret", "alice": 'al"ice'}
    with pytest.raises(ValueError):
        jaas_users('com.example.Other required user_x="y";')
    verify = plain_verifier(users, lambda u, p: (u, p) == ("bob", "from-scram"))
    ok = PlainServer(verify)
    assert ok.step(b"\0admin\0admin-secret") == b"" and ok.username == "admin"
    assert PlainServer(verify).step(b"bob\0bob\0from-scram") == b""
    for token in (b"\0admin\0wrong", b"eve\0admin\0admin-secret", b"\0nobody\0x", b"junk"):
        with pytest.raises(Exception, match=r"invalid|differs|expected"):
            PlainServer(verify).step(token)


def _sasl(reauth_ms: int = 0) -> Session:
    verify = plain_verifier({"alice": "pw", "bob": "pw"})
    return Session(
        ListenerSecurity(
            "SASL_PLAINTEXT", "SASL_PLAINTEXT", ("PLAIN",), lambda m: PlainServer(verify), reauth_ms
        )
    )


def test_nothing_but_api_versions_and_handshake_before_authentication() -> None:
    s = _sasl()
    s.admit(18, 0)
    s.admit(17, 0)
    for api in (0, 1, 3, 36):
        with pytest.raises(Rejected):
            s.admit(api, 0)
    assert s.handshake("SCRAM-SHA-256", 1)[0] == 33  # UNSUPPORTED_SASL_MECHANISM
    assert s.close_after_answer
    s = _sasl()
    assert s.handshake("PLAIN", 1) == (0, ["PLAIN"])
    with pytest.raises(Rejected):
        s.admit(3, 0)
    s.admit(36, 0)
    error, message, _, _ = s.authenticate(b"\0alice\0nope", 0)
    assert error == 58 and message and "invalid credentials" in message
    assert s.close_after_answer and not s.authenticated


def test_session_lifetime_expiry_and_reauthentication() -> None:
    s = _sasl(reauth_ms=1000)
    s.handshake("PLAIN", 1)
    assert s.authenticate(b"\0alice\0pw", 5_000) == (0, None, b"", 1000)
    assert s.principal == "User:alice"
    s.admit(3, 5_999)
    with pytest.raises(Rejected, match="expired"):
        s.admit(3, 6_000)
    s.admit(17, 6_000)  # a new handshake re-authenticates
    assert s.handshake("PLAIN", 1)[0] == 0
    assert s.authenticate(b"\0alice\0pw", 6_100)[0] == 0
    s.admit(3, 6_200)
    # re-authenticating as somebody else is refused
    s.handshake("PLAIN", 1)
    assert s.authenticate(b"\0bob\0pw", 6_300)[0] == 58
    assert s.principal == "User:alice"


def test_plaintext_listener_serves_everything_as_anonymous() -> None:
    s = Session(ListenerSecurity("PLAINTEXT", "PLAINTEXT"))
    s.admit(0, 0)
    assert s.authenticated and s.principal == "User:ANONYMOUS"
    assert s.frame_limit(100 << 20) == 100 << 20
    assert _sasl().frame_limit(100 << 20) == 524288
