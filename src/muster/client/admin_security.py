"""ACLs (CreateAcls, DescribeAcls, DeleteAcls) and SCRAM users
(DescribeUserScramCredentials, AlterUserScramCredentials) for muster's admin
client, by Kafka's enum names (`AclOperation`, `ResourceType`, ...). The
salted password of a new SCRAM credential is computed here, as Java's admin
does: the broker never sees the password."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from muster.client.errors import error_for
from muster.client.net import Cluster
from muster.security.scram import salted_password

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51

# Kafka's enum ids (org.apache.kafka.common.{resource,acl})
RESOURCE_TYPES = {
    "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
    "DELEGATION_TOKEN": 6, "USER": 7,
}  # fmt: skip
PATTERN_TYPES = {"ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
OPERATIONS = {
    "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
    "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12, "CREATE_TOKENS": 13, "DESCRIBE_TOKENS": 14,
}  # fmt: skip
PERMISSIONS = {"ANY": 1, "DENY": 2, "ALLOW": 3}
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def enum_id(table: dict[str, int], name: str, what: str) -> int:
    """A Kafka enum id by its name, any case, `-`/`_` or CamelCase alike."""
    key = name.replace("-", "").replace("_", "").upper()
    for known, value in table.items():
        if known.replace("_", "").replace("-", "") == key:
            return value
    raise ValueError(f"unknown {what} {name!r}")


def enum_name(table: dict[str, int], value: int) -> str:
    return next((k for k, v in table.items() if v == int(value)), str(int(value)))


@dataclass(frozen=True)
class AclBinding:
    """An ACL, or (with ANY / None fields) a filter matching ACLs."""

    resource_type: str  # RESOURCE_TYPES' names
    name: str | None
    pattern_type: str  # PATTERN_TYPES' names
    principal: str | None
    host: str | None
    operation: str  # OPERATIONS' names
    permission: str  # PERMISSIONS' names

    def body(self, filter_: bool) -> dict[str, Any]:
        suffix = "_filter" if filter_ else ""
        return {
            f"resource_type{suffix}": RESOURCE_TYPES[self.resource_type],
            f"resource_name{suffix}": self.name,
            "pattern_type_filter" if filter_ else "resource_pattern_type": PATTERN_TYPES[
                self.pattern_type
            ],
            f"principal{suffix}": self.principal,
            f"host{suffix}": self.host,
            "operation": OPERATIONS[self.operation],
            "permission_type": PERMISSIONS[self.permission],
        }


def _binding(resource_type: int, name: str, pattern: int, acl: Any) -> AclBinding:
    return AclBinding(
        enum_name(RESOURCE_TYPES, resource_type),
        name,
        enum_name(PATTERN_TYPES, pattern),
        acl.principal,
        acl.host,
        enum_name(OPERATIONS, acl.operation),
        enum_name(PERMISSIONS, acl.permission_type),
    )


def _raise(code: int, message: str | None, context: str) -> None:
    if int(code) != 0:
        raise error_for(int(code), message or context)


async def create_acls(cluster: Cluster, bindings: Iterable[AclBinding]) -> None:
    bindings = list(bindings)
    body = {"creations": [b.body(filter_=False) for b in bindings]}
    response = await cluster.send_any(CREATE_ACLS, body)
    for result in response.results:
        _raise(result.error_code, result.error_message, "CreateAcls")


async def describe_acls(cluster: Cluster, filter_: AclBinding) -> list[AclBinding]:
    response = await cluster.send_any(DESCRIBE_ACLS, filter_.body(filter_=True))
    _raise(response.error_code, response.error_message, "DescribeAcls")
    return [
        _binding(r.resource_type, r.resource_name, r.pattern_type, acl)
        for r in response.resources
        for acl in r.acls
    ]


async def delete_acls(cluster: Cluster, filters: Iterable[AclBinding]) -> list[AclBinding]:
    body = {"filters": [f.body(filter_=True) for f in filters]}
    response = await cluster.send_any(DELETE_ACLS, body)
    deleted = []
    for result in response.filter_results:
        _raise(result.error_code, result.error_message, "DeleteAcls")
        for m in result.matching_acls:
            _raise(m.error_code, m.error_message, "DeleteAcls")
            deleted.append(_binding(m.resource_type, m.resource_name, m.pattern_type, m))
    return deleted


async def describe_scram_users(cluster: Cluster) -> dict[str, list[tuple[str, int]]]:
    """{user: [(mechanism, iterations), ...]} of every SCRAM user."""
    response = await cluster.send_any(DESCRIBE_SCRAM, {"users": None})
    _raise(response.error_code, response.error_message, "DescribeUserScramCredentials")
    users: dict[str, list[tuple[str, int]]] = {}
    for r in response.results:
        _raise(r.error_code, r.error_message, f"user {r.user}")
        users[r.user] = [
            (enum_name(SCRAM_MECHANISMS, c.mechanism), int(c.iterations))
            for c in r.credential_infos
        ]
    return users


async def upsert_scram_user(
    cluster: Cluster, user: str, mechanism: str, password: str, iterations: int
) -> None:
    salt = os.urandom(32)
    upsertion = {
        "name": user,
        "mechanism": SCRAM_MECHANISMS[mechanism],
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted_password(mechanism, password, salt, iterations),
    }
    await _alter_scram(cluster, {"deletions": [], "upsertions": [upsertion]}, user)


async def delete_scram_user(cluster: Cluster, user: str, mechanism: str) -> None:
    deletion = {"name": user, "mechanism": SCRAM_MECHANISMS[mechanism]}
    await _alter_scram(cluster, {"deletions": [deletion], "upsertions": []}, user)


async def _alter_scram(cluster: Cluster, body: dict[str, Any], user: str) -> None:
    response = await cluster.send_any(ALTER_SCRAM, body)
    for r in response.results:
        _raise(r.error_code, r.error_message, f"user {user}")

