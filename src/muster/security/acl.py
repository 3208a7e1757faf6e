"""ACLs and the authorizer, as Kafka's StandardAuthorizer decides. Pure: no I/O.

A decision: super users may do anything; otherwise the ACLs whose resource
pattern matches (literal name, literal `*`, or a prefix) and whose principal
(or `User:*`) and host (or `*`) match are consulted: any DENY wins, then an
ALLOW for the operation (or ALL, or one implying it) allows; with no ACL on
the resource at all, `allow.everyone.if.no.acl.found` decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
_IMPLIES_DESCRIBE = {
    Operation.DESCRIBE,
    Operation.READ,
    Operation.WRITE,
    Operation.DELETE,
    Operation.ALTER,
}
_IMPLIES_DESCRIBE_CONFIGS = {Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}

# What each resource type supports, for the authorized-operations bit fields.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
}


class InvalidAcl(ValueError):
    pass


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def validate(self) -> None:
        """What Kafka refuses in CreateAcls (INVALID_REQUEST)."""
        if self.resource_type not in (
            ResourceType.TOPIC,
            ResourceType.GROUP,
            ResourceType.CLUSTER,
            ResourceType.TRANSACTIONAL_ID,
            ResourceType.DELEGATION_TOKEN,
            ResourceType.USER,
        ):
            raise InvalidAcl(f"invalid resource type {self.resource_type}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"invalid pattern type {self.pattern_type}")
        if self.operation in (Operation.ANY, Operation.UNKNOWN) or self.operation not in set(
            Operation
        ):
            raise InvalidAcl(f"invalid operation {self.operation}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl(f"invalid permission type {self.permission}")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidAcl(f"invalid principal {self.principal!r}: expected Type:name")
        if not self.resource_name:
            raise InvalidAcl("empty resource name")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"the cluster resource is named {CLUSTER_NAME}")
        if not self.host:
            raise InvalidAcl("empty host (use * for any host)")

    def resource_matches(self, rtype: int, name: str) -> bool:
        if self.resource_type != rtype:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """DescribeAcls / DeleteAcls filter; None fields match anything."""

    resource_type: int = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = Operation.ANY
    permission: int = Permission.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation != Operation.ANY and acl.operation != self.operation:
            return False
        return self.permission == Permission.ANY or acl.permission == self.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        name = self.resource_name
        if self.pattern_type == PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type == PatternType.PREFIXED:
                return name.startswith(acl.resource_name)
            return acl.resource_name in (name, WILDCARD)
        if self.pattern_type != PatternType.ANY and acl.pattern_type != self.pattern_type:
            return False
        return name is None or acl.resource_name == name


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str  # why, for the audit line


class Authorizer:
    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        super_users: Iterable[str] = (),
        allow_if_no_acl: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.set_bindings(bindings)

    def set_bindings(self, bindings: Iterable[AclBinding]) -> None:
        self._by_type: dict[int, list[AclBinding]] = {}
        for acl in bindings:
            self._by_type.setdefault(acl.resource_type, []).append(acl)

    def authorize(
        self, principal: str, host: str, op: Operation, rtype: ResourceType, name: str
    ) -> Decision:
        if principal in self.super_users:
            return Decision(True, "super user")
        found_resource_acl = False
        allow: AclBinding | None = None
        for acl in self._by_type.get(rtype, ()):
            if not acl.resource_matches(rtype, name):
                continue
            found_resource_acl = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.host not in (WILDCARD, host):
                continue
            if not _operation_matches(acl, op):
                continue
            if acl.permission == Permission.DENY:
                return Decision(False, f"DENY acl {_describe(acl)}")
            allow = allow or acl
        if allow is not None:
            return Decision(True, f"ALLOW acl {_describe(allow)}")
        if not found_resource_acl and self.allow_if_no_acl:
            return Decision(True, "no acl found, allow.everyone.if.no.acl.found=true")
        return Decision(False, "no matching ALLOW acl" if found_resource_acl else "no acl found")

    def any_allowed(self, principal: str, host: str, op: Operation, rtype: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: may `op` succeed on some resource of
        the type (KIP-679: Write on any topic allows an idempotent producer)?"""
        if principal in self.super_users:
            return True
        acls = [
            a
            for a in self._by_type.get(rtype, ())
            if a.principal in (principal, WILDCARD_PRINCIPAL)
            and a.host in (WILDCARD, host)
            and _operation_matches(a, op)
        ]
        denied_literal = {
            a.resource_name
            for a in acls
            if a.permission == Permission.DENY and a.pattern_type == PatternType.LITERAL
        }
        denied_prefix = [
            a.resource_name
            for a in acls
            if a.permission == Permission.DENY and a.pattern_type == PatternType.PREFIXED
        ]
        if WILDCARD in denied_literal or "" in denied_prefix:
            return False
        for a in acls:
            if a.permission != Permission.ALLOW:
                continue
            if a.pattern_type == PatternType.LITERAL and a.resource_name not in denied_literal:
                if not any(a.resource_name.startswith(p) for p in denied_prefix):
                    return True
            if a.pattern_type == PatternType.PREFIXED and not any(
                a.resource_name.startswith(p) for p in denied_prefix
            ):
                return True
        return self.allow_if_no_acl and not self._by_type.get(rtype)

    def authorized_operations(
        self, principal: str, host: str, rtype: ResourceType, name: str
    ) -> int:
        """Kafka's 32-bit field: bit `op` set for each supported operation allowed."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[rtype]:
            if self.authorize(principal, host, op, rtype, name).allowed:
                bits |= 1 << op
        return bits


def all_operations_bits(rtype: ResourceType) -> int:
    """No authorizer: every supported operation is allowed."""
    bits = 0
    for op in SUPPORTED_OPERATIONS[rtype]:
        bits |= 1 << op
    return bits


def _operation_matches(acl: AclBinding, op: Operation) -> bool:
    if acl.operation == Operation.ALL or acl.operation == op:
        return True
    if acl.permission != Permission.ALLOW:
        return False  # a DENY of READ does not deny DESCRIBE
    if op == Operation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if op == Operation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


def _describe(acl: AclBinding) -> str:
    return (
        f"(principal={acl.principal}, host={acl.host}, "
        f"op={Operation(acl.operation).name}, permission={Permission(acl.permission).name}) "
        f"on {ResourceType(acl.resource_type).name}:{PatternType(acl.pattern_type).name}:"
        f"{acl.resource_name}"
    )
