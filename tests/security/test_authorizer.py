"""The pure authorizer, after Kafka's StandardAuthorizerTest / AclAuthorizerTest
cases: deny wins, implied operations, wildcards and prefixes, hosts, super
users, allow.everyone.if.no.acl.found; and the Describe/DeleteAcls filters."""

from __future__ import annotations

import pytest

from muster.security.acl import (
    AclBinding,
    AclFilter,
    Authorizer,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

T, G, C, X = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER = "192.168.1.1", "192.168.1.2"


def acl(
    rtype: ResourceType = T,
    name: str = "foo",
    principal: str = ALICE,
    op: Operation = Operation.READ,
    perm: Permission = ALLOW,
    pattern: PatternType = LIT,
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def allows(
    auth: Authorizer,
    op: Operation,
    name: str = "foo",
    principal: str = ALICE,
    rtype: ResourceType = T,
    host: str = HOST,
) -> bool:
    return auth.authorize(principal, host, op, rtype, name).allowed


def test_no_acl_found_denies_unless_allow_everyone() -> None:
    assert not allows(Authorizer(), Operation.READ)
    assert allows(Authorizer(allow_if_no_acl=True), Operation.READ)
    # an ACL for somebody else on the resource means "found": allow.everyone does not apply
    auth = Authorizer([acl(principal=BOB)], allow_if_no_acl=True)
    assert not allows(auth, Operation.READ)
    assert allows(auth, Operation.READ, name="unrelated")


def test_deny_takes_precedence_and_all_operation() -> None:
    auth = Authorizer([acl(op=Operation.ALL), acl(op=Operation.WRITE, perm=DENY)])
    assert allows(auth, Operation.READ)
    assert not allows(auth, Operation.WRITE)
    auth = Authorizer([acl(op=Operation.READ), acl(op=Operation.ALL, perm=DENY, host=HOST)])
    assert not allows(auth, Operation.READ)
    assert allows(auth, Operation.READ, host=OTHER)


def test_implied_operations_only_for_allow() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert allows(Authorizer([acl(op=op)]), Operation.DESCRIBE), op
    assert not allows(Authorizer([acl(op=Operation.CREATE)]), Operation.DESCRIBE)
    assert allows(Authorizer([acl(op=Operation.ALTER_CONFIGS)]), Operation.DESCRIBE_CONFIGS)
    assert not allows(Authorizer([acl(op=Operation.READ)]), Operation.WRITE)
    # a DENY of READ does not deny DESCRIBE implied by an ALLOW of WRITE
    auth = Authorizer([acl(op=Operation.WRITE), acl(op=Operation.READ, perm=DENY)])
    assert allows(auth, Operation.DESCRIBE) and not allows(auth, Operation.READ)


def test_wildcard_principal_resource_and_host() -> None:
    auth = Authorizer([acl(name="*", principal="User:*", host="*")])
    assert allows(auth, Operation.READ, name="anything", principal=BOB)
    auth = Authorizer([acl(host=HOST)])
    assert allows(auth, Operation.READ) and not allows(auth, Operation.READ, host=OTHER)
    auth = Authorizer([acl(name="*", op=Operation.ALL), acl(name="secret", perm=DENY)])
    assert allows(auth, Operation.READ, name="public")
    assert not allows(auth, Operation.READ, name="secret")


def test_prefixed_acls() -> None:
    auth = Authorizer([acl(name="orders.", pattern=PRE), acl(name="orders.secret", perm=DENY)])
    assert allows(auth, Operation.READ, name="orders.eu")
    assert not allows(auth, Operation.READ, name="orders.secret")
    assert not allows(auth, Operation.READ, name="order")
    auth = Authorizer([acl(name="orders.", pattern=PRE, perm=DENY), acl(name="*")])
    assert not allows(auth, Operation.READ, name="orders.eu")
    assert allows(auth, Operation.READ, name="payments")


def test_resource_types_are_separate_and_super_users_bypass() -> None:
    auth = Authorizer([acl(rtype=G, name="foo")], super_users=["User:admin"])
    assert allows(auth, Operation.READ, rtype=G) and not allows(auth, Operation.READ, rtype=T)
    assert allows(auth, Operation.ALTER, rtype=C, name="kafka-cluster", principal="User:admin")
    assert not allows(auth, Operation.ALTER, rtype=C, name="kafka-cluster")


def test_any_allowed_for_idempotent_producers() -> None:
    assert Authorizer([acl(op=Operation.WRITE, name="t")]).any_allowed(
        ALICE, HOST, Operation.WRITE, T
    )
    assert not Authorizer([acl(op=Operation.READ)]).any_allowed(ALICE, HOST, Operation.WRITE, T)
    denied_all = Authorizer([acl(op=Operation.WRITE), acl(name="*", perm=DENY, op=Operation.ALL)])
    assert not denied_all.any_allowed(ALICE, HOST, Operation.WRITE, T)


def test_authorized_operations_bits() -> None:
    auth = Authorizer([acl(op=Operation.READ)])
    bits = auth.authorized_operations(ALICE, HOST, T, "foo")
    assert bits == (1 << Operation.READ) | (1 << Operation.DESCRIBE)
    assert auth.authorized_operations(BOB, HOST, T, "foo") == 0


def test_filters_match_as_kafka() -> None:
    lit, pre, star = acl(name="foo.bar"), acl(name="foo.", pattern=PRE), acl(name="*")
    other = acl(name="foo.bar", principal=BOB, op=Operation.WRITE, perm=DENY)
    every = [lit, pre, star, other]
    assert [a for a in every if AclFilter().matches(a)] == every
    match = AclFilter(T, "foo.bar", PatternType.MATCH)
    assert [a for a in every if match.matches(a)] == every
    assert [a for a in every if AclFilter(T, "foo.bar", LIT).matches(a)] == [lit, other]
    assert [a for a in every if AclFilter(pattern_type=PRE).matches(a)] == [pre]
    by_principal = AclFilter(principal=BOB, operation=Operation.WRITE, permission=DENY)
    assert [a for a in every if by_principal.matches(a)] == [other]
    assert not AclFilter(G).matches(lit)


@pytest.mark.parametrize(
    "bad",
    [
        AclBinding(T, "t", PatternType.MATCH, ALICE, "*", Operation.READ, ALLOW),
        AclBinding(T, "t", LIT, "alice", "*", Operation.READ, ALLOW),
        AclBinding(T, "t", LIT, ALICE, "*", Operation.ANY, ALLOW),
        AclBinding(C, "not-kafka-cluster", LIT, ALICE, "*", Operation.ALTER, ALLOW),
        AclBinding(X, "", LIT, ALICE, "*", Operation.WRITE, ALLOW),
        AclBinding(T, "t", LIT, ALICE, "*", Operation.READ, Permission.ANY),
    ],
)
def test_invalid_bindings_are_refused(bad: AclBinding) -> None:
    with pytest.raises(InvalidAcl):
        bad.validate()
