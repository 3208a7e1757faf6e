"""SASL on a PLAINTEXT listener (handshake and authenticate errors) and the ACL
APIs. Neither broker runs an authorizer here (Kafka's default, muster's
default): CreateAcls / DescribeAcls / DeleteAcls answer SECURITY_DISABLED on
both; muster's authorizer is held against its own tests (tests/wire/
test_security_acls.py), not against Kafka's StandardAuthorizer."""

from __future__ import annotations

from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


def _handshake(v: int):
    def run(s: Session) -> None:
        for i, mech in enumerate(("PLAIN", "SCRAM-SHA-512", "GSSAPI", "NOPE")):
            s.call(SASL_HANDSHAKE, v, {"mechanism": mech}, f"handshake_{mech}", conn=i)
            # and what the connection does after it
            s.call(
                18,
                3,
                {"client_software_name": "k", "client_software_version": "1"},
                f"then_api_versions_{mech}",
                conn=i,
                record=False,
            )

    return run


def _authenticate(v: int):
    def run(s: Session) -> None:
        s.call(SASL_AUTHENTICATE, v, {"auth_bytes": b"\0user\0pw"}, "without_handshake")
        s.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, "handshake", conn=1)
        s.call(
            SASL_AUTHENTICATE, v, {"auth_bytes": b"\0user\0pw"}, "after_refused_handshake", conn=1
        )

    return run


for _v in range(2):
    register("security", f"sasl_handshake_v{_v}", _handshake(_v))
for _v in range(3):
    register("security", f"sasl_authenticate_v{_v}", _authenticate(_v))

ACL = {
    "resource_type": 2,
    "resource_name": "t",
    "resource_pattern_type": 3,
    "principal": "User:alice",
    "host": "*",
    "operation": 3,
    "permission_type": 3,
}
FILTER = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}


def _acls(v: int):
    def run(s: Session) -> None:
        s.call(CREATE_ACLS, v, {"creations": [ACL]}, "create")
        s.call(CREATE_ACLS, v, {"creations": [{**ACL, "resource_type": 99}]}, "create_bad_type")
        s.call(DESCRIBE_ACLS, v, FILTER, "describe_any")
        s.call(
            DESCRIBE_ACLS,
            v,
            {
                **FILTER,
                "resource_type_filter": 2,
                "resource_name_filter": "t",
                "pattern_type_filter": 3,
            },
            "describe_topic",
        )
        s.call(DESCRIBE_ACLS, v, {**FILTER, "resource_type_filter": 0}, "describe_unknown_type")
        s.call(DELETE_ACLS, v, {"filters": [FILTER]}, "delete_any")
        s.call(
            DELETE_ACLS,
            v,
            {"filters": [{**FILTER, "principal_filter": "User:alice"}]},
            "delete_principal",
        )

    return run


for _v in range(1, 4):
    register("security", f"acls_v{_v}", _acls(_v))
