"""ACLs enforced over the wire (issue 14): Kafka's error codes, nothing
created or changed by a denied request, an audit line per denial, ACLs and
authorized operations managed and read with confluent-kafka's AdminClient,
ACLs that survive kill -9. One broker with StandardAuthorizer for the module;
alice and bob log in with PLAIN (SASL_PLAINTEXT) or their certificates (SSL)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from muster.security.properties import STANDARD_AUTHORIZER
from tests.support.brokers import MusterProcess
from tests.support.security import (
    ADMIN,
    ADMIN_PW,
    Closed,
    RawClient,
    librdkafka_conf,
    secured_settings,
)

LISTENERS = {"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SSL": "SSL", "PLAINTEXT": "PLAINTEXT"}
PASSWORDS = {ADMIN: ADMIN_PW, "alice": "alice-secret", "bob": "bob-secret"}
A, TOPIC, GROUP, TXN = (
    "User:alice",
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.TRANSACTIONAL_ID,
)
PRE, LIT, ALLOW = ResourcePatternType.PREFIXED, ResourcePatternType.LITERAL, AclPermissionType.ALLOW

ALICE_ACLS = [
    AclBinding(TOPIC, "alice-", PRE, A, "*", AclOperation.READ, ALLOW),
    AclBinding(TOPIC, "alice-", PRE, A, "*", AclOperation.WRITE, ALLOW),
    AclBinding(GROUP, "alice-", PRE, A, "*", AclOperation.READ, ALLOW),
    AclBinding(TXN, "alice-txn", LIT, A, "*", AclOperation.WRITE, ALLOW),
    # bob may see one of alice's topics (Describe) and read with his own group
    AclBinding(TOPIC, "alice-shared", LIT, "User:bob", "*", AclOperation.DESCRIBE, ALLOW),
    AclBinding(GROUP, "bob-", PRE, "User:bob", "*", AclOperation.READ, ALLOW),
]


def conf(broker: MusterProcess, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[MusterProcess]:
    settings = secured_settings(
        certs,
        **{
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": f"User:{ADMIN};User:ops",
        },
    )
    proc = MusterProcess(tmp_path_factory.mktemp("acls") / "data", settings, LISTENERS).start()
    admin = AdminClient(conf(proc, ADMIN))
    for future in admin.create_acls(ALICE_ACLS).values():
        future.result(15)
    topics = [NewTopic(t, 1, 1) for t in ("alice-orders", "alice-shared", "alice-private")]
    for future in admin.create_topics(topics).values():
        future.result(15)
    yield proc
    proc.close()


def _produce(c: dict[str, Any], topic: str, value: bytes) -> KafkaError | None:
    errors: list[KafkaError] = []
    producer = Producer({**c, "message.timeout.ms": 10000})
    producer.produce(topic, value, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(15)
    return errors[0] if errors else None


def _end_offset(broker: MusterProcess, topic: str) -> int:
    consumer = Consumer({**conf(broker, ADMIN), "group.id": "admin-probe"})
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    return int(high)


def _login(broker: MusterProcess, user: str) -> RawClient:
    raw = RawClient(broker.ports["SASL_PLAINTEXT"])
    assert raw.plain_login(user, PASSWORDS[user]).error_code == 0
    return raw


def _groups(broker: MusterProcess) -> set[str]:
    admin = AdminClient(conf(broker, ADMIN))  # kept alive until the answer is in
    result = admin.list_consumer_groups().result(15)
    return {g.group_id for g in result.valid}


def _commit(raw: RawClient, group: str, topic: str, offset: int) -> Any:
    """A standalone OffsetCommit v8 (generation -1) of partition 0."""
    partition = {
        "partition_index": 0,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    return raw.call(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": topic, "partitions": [partition]}],
        },
    )


def test_alice_produces_consumes_in_her_group_and_commits(broker: MusterProcess) -> None:
    c = conf(broker, "alice")
    assert _produce(c, "alice-orders", b"o1") is None
    consumer = Consumer(
        {**c, "group.id": "alice-g", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe(["alice-orders"])
    got = None
    deadline = time.monotonic() + 30
    while got is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got = msg.value()
    consumer.commit(asynchronous=False)
    assert consumer.committed([TopicPartition("alice-orders", 0)], 10)[0].offset == 1
    consumer.close()
    assert got == b"o1"


def test_without_write_producing_is_refused_and_nothing_is_written(
    broker: MusterProcess,
) -> None:
    # bob may describe alice-shared, so the Produce itself reaches the broker
    before = _end_offset(broker, "alice-shared")
    err = _produce(conf(broker, "bob"), "alice-shared", b"bob-was-here")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _end_offset(broker, "alice-shared") == before
    assert "Principal = User:bob is Denied operation = WRITE" in broker.log_text()


def test_without_read_consuming_is_refused(broker: MusterProcess) -> None:
    assert _produce(conf(broker, "alice"), "alice-shared", b"s1") is None
    consumer = Consumer(
        {**conf(broker, "bob"), "group.id": "bob-readers", "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition("alice-shared", 0, 0)])
    error = None
    deadline = time.monotonic() + 20
    while error is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        assert msg is None or msg.error() is not None, "bob read a record without Read"
        if msg is not None:
            error = msg.error()
    consumer.close()
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_without_group_read_committing_or_joining_creates_no_group(
    broker: MusterProcess,
) -> None:
    raw = _login(broker, "bob")
    commit = _commit(raw, "alice-g", "alice-shared", 0)
    assert commit.topics[0].partitions[0].error_code == 30  # GROUP_AUTHORIZATION_FAILED
    join = raw.call(
        11,
        5,
        {
            "group_id": "alice-stolen",
            "session_timeout": 10000,
            "rebalance_timeout": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    assert join.error_code == 30
    # bob's own group, but a topic he may not Read: TOPIC_AUTHORIZATION_FAILED, no offset kept
    own = _commit(raw, "bob-g", "alice-private", 5)
    assert own.topics[0].partitions[0].error_code == 29
    assert not {"alice-stolen", "bob-g"} & _groups(broker)


def test_without_describe_the_topic_is_hidden_and_never_created(broker: MusterProcess) -> None:
    raw = _login(broker, "bob")
    listing = raw.call(3, 12, {"topics": None, "include_topic_authorized_operations": True})
    assert [t.name for t in listing.topics] == ["alice-shared"]
    assert listing.topics[0].topic_authorized_operations == 1 << 8  # DESCRIBE only
    named = raw.call(
        3,
        12,
        {
            "topics": [{"name": "alice-orders"}, {"name": "bob-new"}],
            "allow_auto_topic_creation": True,
        },
    )
    assert [t.error_code for t in named.topics] == [29, 29]
    alice = _login(broker, "alice")
    mine = alice.call(
        3, 12, {"topics": [{"name": "alice-orders"}], "include_topic_authorized_operations": True}
    )
    assert mine.topics[0].topic_authorized_operations == (1 << 3) | (1 << 4) | (1 << 8)
    assert "bob-new" not in AdminClient(conf(broker, ADMIN)).list_topics(timeout=10).topics
    anonymous = RawClient(broker.ports["PLAINTEXT"])
    assert anonymous.call(3, 12, {"topics": None}).topics == ()


def test_deleting_someone_elses_group_is_refused(broker: MusterProcess) -> None:
    assert (
        _commit(_login(broker, "alice"), "alice-g", "alice-orders", 1)
        .topics[0]
        .partitions[0]
        .error_code
        == 0
    )
    assert "alice-g" in _groups(broker)
    answer = _login(broker, "bob").call(42, 2, {"groups_names": ["alice-g"]})
    assert answer.results[0].error_code == 30
    assert "alice-g" in _groups(broker)
    # what alice may do with her group, as DescribeGroups reports it
    alice = AdminClient(conf(broker, "alice"))
    described = alice.describe_consumer_groups(["alice-g"], include_authorized_operations=True)
    ops = described["alice-g"].result(10).authorized_operations
    assert sorted(op.name for op in ops) == ["DESCRIBE", "READ"]


def test_another_principals_transactional_id_is_refused(broker: MusterProcess) -> None:
    answer = _login(broker, "bob").call(
        22,
        4,
        {
            "transactional_id": "alice-txn",
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert answer.error_code == 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    producer = Producer({**conf(broker, "bob"), "transactional.id": "alice-txn"})
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(15)
    assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # alice's own transaction goes through
    txn = Producer({**conf(broker, "alice"), "transactional.id": "alice-txn"})
    txn.init_transactions(15)
    txn.begin_transaction()
    txn.produce("alice-orders", b"in-txn")
    txn.commit_transaction(15)


def test_mutual_tls_principal_from_certificate(broker: MusterProcess, certs: Path) -> None:
    base = {"bootstrap.servers": broker.address("SSL")}
    assert (
        _produce({**base, **librdkafka_conf(certs, None, cert="alice")}, "alice-orders", b"by-cert")
        is None
    )
    err = _produce({**base, **librdkafka_conf(certs, None, cert="bob")}, "alice-orders", b"no")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_acls_managed_over_the_wire_and_durable(broker: MusterProcess) -> None:
    admin = AdminClient(conf(broker, ADMIN))
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert sorted(map(str, admin.describe_acls(everything).result(10))) == sorted(
        map(str, ALICE_ACLS)
    )
    # non-admins may not read or change ACLs (librdkafka drops DescribeAcls'
    # error code, so that one is read raw)
    alice = AdminClient(conf(broker, "alice"))
    self_grant = AclBinding(TOPIC, "*", LIT, A, "*", AclOperation.ALL, ALLOW)
    with pytest.raises(KafkaException) as info:
        alice.create_acls([self_grant])[self_grant].result(10)
    assert info.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    described = _login(broker, "alice").call(
        29,
        3,
        {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        },
    )
    assert (described.error_code, described.resources) == (31, ())
    grant = AclBinding(TOPIC, "alice-private", LIT, "User:bob", "*", AclOperation.READ, ALLOW)
    admin.create_acls([grant])[grant].result(10)
    broker.restart(hard=True)
    admin = AdminClient(conf(broker, ADMIN))
    assert str(grant) in map(str, admin.describe_acls(everything).result(10))
    bob_filter = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:bob",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deleted = admin.delete_acls([bob_filter])[bob_filter].result(10)
    assert len(deleted) == 3
    left = admin.describe_acls(everything).result(10)
    assert all(b.principal == A for b in left) and len(left) == 4
    with pytest.raises(Closed):
        RawClient(broker.ports["SASL_PLAINTEXT"]).call(3, 12, {"topics": None})


def test_client_quotas_need_cluster_configs_rights(broker: MusterProcess) -> None:
    """Without ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster every quota entry,
    valid or not, and every describe is refused as Kafka refuses them; the
    super user gets the answer anyone with the right would: muster keeps no
    quotas (DIFFERENCES.md D12)."""

    def alter(raw: RawClient) -> list[tuple[int, str]]:
        entries = [
            ("app", [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]),
            ("bad", [{"key": "producer_byte_rate", "value": -1.0, "remove": False}]),
        ]
        body = {
            "entries": [
                {"entity": [{"entity_type": "client-id", "entity_name": n}], "ops": ops}
                for n, ops in entries
            ],
            "validate_only": False,
        }
        return [(e.error_code, e.error_message) for e in raw.call(49, 1, body).entries]

    denied = (KafkaError.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    alice = _login(broker, "alice")
    assert alter(alice) == [denied, denied]
    described = alice.call(48, 1, {"components": [], "strict": False})
    assert (described.error_code, described.entries) == (denied[0], None)
    assert alter(_login(broker, ADMIN)) == [
        (
            KafkaError.INVALID_REQUEST,
            "muster does not throttle clients, so it keeps no client quotas"
            " (conformance/DIFFERENCES.md D12)",
        ),
        (KafkaError.INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0"),
    ]
    assert _login(broker, ADMIN).call(48, 1, {"components": [], "strict": False}).entries == ()
