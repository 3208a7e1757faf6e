"""Share groups (KIP-932) over a real socket, raw requests: served and
advertised by default, as by Kafka 4.4 (not with `muster.share.enable=false`);
a member joins and is
assigned; ShareFetch opens a session, initialises the share partition at the
end (`share.auto.offset.reset` latest), hands out new records under locks
with their AcquiredRecords ranges, answers a partition without records with
empty, non-null Records; acknowledgements and the session-epoch errors are
Kafka's."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.serial import entity_reader

from muster.protocol.codec import build, request_schema, response_schema
from tests.protocol.test_pipelining import frame, read_frame
from tests.support.brokers import MusterProcess
from tests.wire.clients import confluent_produce, create_topic

HEARTBEAT, FETCH, ACK = 76, 78, 79
INVALID_REQUEST, SESSION_NOT_FOUND, BAD_EPOCH, RECORD_STATE = 42, 122, 123, 121
LIMIT_REACHED = 133
ACCEPT = 1


@pytest.fixture(scope="module")
def share_muster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    data: Path = tmp_path_factory.mktemp("share") / "data"
    broker = MusterProcess(
        data,
        {
            "muster.fsync": "never",
            "share.coordinator.state.topic.num.partitions": "3",
            "share.coordinator.snapshot.update.records.per.snapshot": "3",
        },
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


class Conn:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.correlation = 0

    def call(self, api: int, version: int, body: dict[str, Any]) -> Any:
        self.correlation += 1
        request = build(request_schema(api, version), body)
        self.sock.sendall(frame(api, version, self.correlation, request, flexible=True))
        data = read_frame(self.sock)
        # ApiVersions answers with header v0 (no tags): its body starts after the correlation id
        return entity_reader(response_schema(api, version))(data, 4 if api == 18 else 5)[0]


def _versions(conn: Conn) -> dict[int, tuple[int, int]]:
    answer = conn.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}


def _heartbeat(conn: Conn, group: str, member: str, topic: str) -> Any:
    """A member's first heartbeat (epoch 0), subscribed to `topic`."""
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": [topic],
    }
    return conn.call(HEARTBEAT, 1, body)


def _join(conn: Conn, group: str, member: str, topic: str) -> uuid.UUID:
    """The member joins; the id of the topic it is assigned."""
    joined = _heartbeat(conn, group, member, topic)
    assert joined.error_code == 0
    return uuid.UUID(str(joined.assignment.topic_partitions[0].topic_id))


def _fetch(conn: Conn, group: str, member: str, epoch: int, topic_id: uuid.UUID, acks=()) -> Any:
    partition = {"partition_index": 0, "acknowledgement_batches": list(acks)}
    return conn.call(
        FETCH,
        2,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": epoch,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 100,
            "batch_size": 100,
            "topics": [{"topic_id": topic_id, "partitions": [partition]}],
            "forgotten_topics_data": [],
        },
    )


def _ack(conn: Conn, group: str, member: str, epoch: int, topic_id: uuid.UUID, acks: list) -> Any:
    partition = {"partition_index": 0, "acknowledgement_batches": acks}
    return conn.call(
        ACK,
        2,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": epoch,
            "topics": [{"topic_id": topic_id, "partitions": [partition]}],
        },
    )


def test_share_apis_are_advertised_by_default_and_not_when_disabled(
    shared_muster: MusterProcess,
) -> None:
    import muster

    on = _versions(Conn(shared_muster.port))  # the default settings
    assert on[76] == (1, 1) and on[78] == (1, 2) and on[79] == (1, 2) and on[90] == (0, 1)
    with muster.Broker({"muster.share.enable": False}) as broker:
        off = _versions(Conn(broker.port))
    assert not {76, 77, 78, 79, 90, 91, 92} & set(off)


def test_join_fetch_acknowledge(share_muster: MusterProcess) -> None:
    topic, group, member = "share-wire", "share-wire-g", str(uuid.uuid4())
    create_topic(share_muster.bootstrap, topic)
    conn = Conn(share_muster.port)
    joined = _heartbeat(conn, group, member, topic)
    assert joined.error_code == 0 and joined.member_epoch >= 1
    (assigned,) = joined.assignment.topic_partitions
    topic_id = assigned.topic_id
    assert list(assigned.partitions) == [0]

    # acknowledgements on a session's first fetch are refused
    ack = {"first_offset": 0, "last_offset": 0, "acknowledge_types": [ACCEPT]}
    assert _fetch(conn, group, member, 0, topic_id, [ack]).error_code == INVALID_REQUEST
    assert _ack(conn, group, "nobody", 1, topic_id, [ack]).error_code == SESSION_NOT_FOUND
    # latest: the share partition starts at the end, records come after
    first = _fetch(conn, group, member, 0, topic_id)
    (part,) = first.responses[0].partitions
    assert first.error_code == 0 and part.records is not None and len(part.records) == 0
    confluent_produce(share_muster.bootstrap, topic, [(0, None, b"x", [])] * 5)
    got = _fetch(conn, group, member, 1, topic_id)
    (part,) = got.responses[0].partitions
    ranges = [
        (int(r.first_offset), int(r.last_offset), int(r.delivery_count))
        for r in part.acquired_records
    ]
    assert ranges == [(0, 4, 1)] and len(part.records) > 0
    assert int(got.acquisition_lock_timeout.total_seconds() * 1000) == 30000
    # the session's epoch moves one per request
    assert _ack(conn, group, member, 1, topic_id, [ack]).error_code == BAD_EPOCH
    done = _ack(conn, group, member, 2, topic_id, [{**ack, "last_offset": 4}])
    assert done.error_code == 0 and done.responses[0].partitions[0].error_code == 0
    again = _ack(conn, group, member, 3, topic_id, [ack])
    assert again.responses[0].partitions[0].error_code == RECORD_STATE  # already accepted
    # the final epoch closes the session
    assert _fetch(conn, group, member, -1, topic_id).error_code == 0
    assert _fetch(conn, group, member, 4, topic_id).error_code == SESSION_NOT_FOUND


def test_read_committed_hands_out_only_committed_records(share_muster: MusterProcess) -> None:
    from confluent_kafka import Producer

    topic, group, member = "share-txn", "share-txn-g", str(uuid.uuid4())
    create_topic(share_muster.bootstrap, topic)
    producer = Producer({"bootstrap.servers": share_muster.bootstrap, "transactional.id": "st"})
    producer.init_transactions(15)
    for values, commit in (([b"a1", b"a2", b"a3"], False), ([b"c1", b"c2"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, v, partition=0)
        producer.flush(15)
        (producer.commit_transaction if commit else producer.abort_transaction)(15)
    conn = Conn(share_muster.port)
    configs = [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
        {"name": "share.isolation.level", "config_operation": 0, "value": "read_committed"},
    ]
    altered = conn.call(
        44,
        1,
        {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": configs}],
            "validate_only": False,
        },
    )
    assert altered.responses[0].error_code == 0
    topic_id = _join(conn, group, member, topic)
    got = _fetch(conn, group, member, 0, topic_id)
    (part,) = got.responses[0].partitions
    # 0-2 aborted, 3 its marker, 4-5 committed, 6 the commit marker
    ranges = [(int(r.first_offset), int(r.last_offset)) for r in part.acquired_records]
    assert ranges == [(4, 5)]


def _acquired(answer: Any) -> list[tuple[int, int]]:
    """(offset, delivery count) of every record a ShareFetch handed out."""
    (part,) = answer.responses[0].partitions if answer.responses else (None,)
    if part is None:
        return []
    return [
        (o, int(r.delivery_count))
        for r in part.acquired_records
        for o in range(int(r.first_offset), int(r.last_offset) + 1)
    ]


def _start_offset(conn: Conn, group: str) -> int:
    answer = conn.call(90, 1, {"groups": [{"group_id": group, "topics": None}]})
    (topic,) = answer.groups[0].topics
    return int(topic.partitions[0].start_offset)


def test_acknowledged_records_survive_kill_9_and_held_ones_come_back(
    share_muster: MusterProcess,
) -> None:
    """The share partition's state is in `__share_group_state` (a snapshot
    every 3 updates here, older records pruned): after `kill -9` nothing
    accepted or rejected is handed out again, every record released or still
    locked at the crash is, the SPSO chosen by `latest` or set by
    AlterShareGroupOffsets holds, and the group's lock duration (a group
    config) is still set."""
    topic, group = "share-crash", "share-crash-g"
    create_topic(share_muster.bootstrap, topic)
    confluent_produce(share_muster.bootstrap, topic, [(0, None, b"before", [])] * 5)
    conn = Conn(share_muster.port)
    lock = {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "15000"}
    altered = conn.call(
        44,
        1,
        {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": [lock]}],
            "validate_only": False,
        },
    )
    assert altered.responses[0].error_code == 0
    member = str(uuid.uuid4())
    topic_id = _join(conn, group, member, topic)
    assert _acquired(_fetch(conn, group, member, 0, topic_id)) == []  # latest: SPSO 5
    confluent_produce(share_muster.bootstrap, topic, [(0, None, b"r", [])] * 10)  # 5..14
    assert _acquired(_fetch(conn, group, member, 1, topic_id)) == [(o, 1) for o in range(5, 15)]
    epoch = 2
    # four writes: the third is a snapshot (cadence 3), and the log is pruned below it
    for first, last, kind in ((5, 6, ACCEPT), (7, 8, ACCEPT), (9, 9, 3), (10, 10, 2)):
        batch = {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}
        done = _ack(conn, group, member, epoch, topic_id, [batch])
        assert done.error_code == 0 and done.responses[0].partitions[0].error_code == 0
        epoch += 1
    assert _start_offset(conn, group) == 10
    # another group, emptied, has its start offset set by AlterShareGroupOffsets
    other, leaver = group + "-altered", str(uuid.uuid4())
    _join(conn, other, leaver, topic)
    leave = {"group_id": other, "member_id": leaver, "member_epoch": -1, "rack_id": None}
    assert conn.call(HEARTBEAT, 1, {**leave, "subscribed_topic_names": None}).error_code == 0
    alter = {
        "group_id": other,
        "topics": [
            {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 3}]}
        ],
    }
    (altered_topic,) = conn.call(91, 0, alter).responses
    assert [int(p.error_code) for p in altered_topic.partitions] == [0]

    share_muster.kill()  # 11..14 are still locked to the member
    share_muster.start()

    conn = Conn(share_muster.port)
    assert _start_offset(conn, group) == 10
    assert _start_offset(conn, other) == 3
    member = str(uuid.uuid4())
    topic_id = _join(conn, group, member, topic)
    got = _fetch(conn, group, member, 0, topic_id)
    assert int(got.acquisition_lock_timeout.total_seconds() * 1000) == 15000
    # the released record comes back with its second delivery; the locked ones
    # come back too; nothing accepted, rejected or before the SPSO
    assert _acquired(got) == [(10, 2), (11, 1), (12, 1), (13, 1), (14, 1)]
    batch = {"first_offset": 10, "last_offset": 14, "acknowledge_types": [ACCEPT]}
    assert _ack(conn, group, member, 1, topic_id, [batch]).error_code == 0

    share_muster.kill()
    share_muster.start()

    conn = Conn(share_muster.port)
    assert _start_offset(conn, group) == 15
    member = str(uuid.uuid4())
    topic_id = _join(conn, group, member, topic)
    assert _acquired(_fetch(conn, group, member, 0, topic_id)) == []


def test_by_duration_starts_at_the_first_record_that_recent(share_muster: MusterProcess) -> None:
    """`share.auto.offset.reset=by_duration:PT1H`: the share partition starts
    at the first record at most an hour old (records of two hours ago are
    skipped); with none that recent it starts at the end."""
    from confluent_kafka import Producer

    topic, group = "share-duration", "share-duration-g"
    create_topic(share_muster.bootstrap, topic)
    producer = Producer({"bootstrap.servers": share_muster.bootstrap})
    now = int(time.time() * 1000)
    for ts in (now - 7_200_000, now - 7_100_000, now - 60_000, now):  # offsets 0..3
        producer.produce(topic, b"v", partition=0, timestamp=ts)
    assert producer.flush(15) == 0
    conn = Conn(share_muster.port)
    reset = {"name": "share.auto.offset.reset", "config_operation": 0, "value": "by_duration:PT1H"}
    body = {
        "resources": [{"resource_type": 32, "resource_name": group, "configs": [reset]}],
        "validate_only": False,
    }
    assert conn.call(44, 1, body).responses[0].error_code == 0
    member = str(uuid.uuid4())
    topic_id = _join(conn, group, member, topic)
    assert _acquired(_fetch(conn, group, member, 0, topic_id)) == [(2, 1), (3, 1)]
    # a group for which nothing is that recent starts at the end
    short = {**reset, "value": "by_duration:PT0S"}
    later = {**body, "resources": [{**body["resources"][0], "resource_name": group + "2"}]}
    later["resources"][0]["configs"] = [short]
    assert conn.call(44, 1, later).responses[0].error_code == 0
    other = str(uuid.uuid4())
    topic_id = _join(conn, group + "2", other, topic)
    assert _acquired(_fetch(conn, group + "2", other, 0, topic_id)) == []


def test_a_closed_connection_ends_its_share_sessions(share_muster: MusterProcess) -> None:
    """The connection that opened a share session closes: the session ends
    (SHARE_SESSION_NOT_FOUND on another connection) and the records it held
    go straight to another member, their delivery counted, as Kafka 4.4 does
    (asked the same steps: tests would wait the 30 s lock otherwise)."""
    topic, group = "share-disconnect", "share-disconnect-g"
    create_topic(share_muster.bootstrap, topic)
    first, a = Conn(share_muster.port), str(uuid.uuid4())
    topic_id = _join(first, group, a, topic)
    assert _acquired(_fetch(first, group, a, 0, topic_id)) == []
    confluent_produce(share_muster.bootstrap, topic, [(0, None, b"x", [])] * 3)
    assert _acquired(_fetch(first, group, a, 1, topic_id)) == [(0, 1), (1, 1), (2, 1)]
    first.sock.close()
    second, b = Conn(share_muster.port), str(uuid.uuid4())
    topic_id = _join(second, group, b, topic)
    deadline = time.monotonic() + 10
    got: list[tuple[int, int]] = []
    epoch = 0
    while not got and time.monotonic() < deadline:  # the close is seen a moment later
        got = _acquired(_fetch(second, group, b, epoch, topic_id))
        epoch += 1
    assert got == [(0, 2), (1, 2), (2, 2)]
    assert _fetch(Conn(share_muster.port), group, a, 2, topic_id).error_code == SESSION_NOT_FOUND


def test_share_sessions_are_bounded() -> None:
    """`group.share.max.share.sessions`: a new share session past the bound
    gets SHARE_SESSION_LIMIT_REACHED; a closed one makes room."""
    import muster

    with muster.Broker({"group.share.max.share.sessions": 1}) as broker:
        create_topic(broker.bootstrap_servers, "bounded")
        conn = Conn(broker.port)
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        topic_id = _join(conn, "bounded-g", a, "bounded")
        _join(conn, "bounded-g", b, "bounded")
        assert _fetch(conn, "bounded-g", a, 0, topic_id).error_code == 0
        assert _fetch(conn, "bounded-g", b, 0, topic_id).error_code == LIMIT_REACHED
        assert _fetch(conn, "bounded-g", a, 0, topic_id).error_code == 0  # its own: replaced
        assert _fetch(conn, "bounded-g", a, -1, topic_id).error_code == 0
        assert _fetch(conn, "bounded-g", b, 0, topic_id).error_code == 0
