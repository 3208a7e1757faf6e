"""The ConsumerGroup* records of __consumer_offsets (KIP-848) in the schema
table of offsets_topic: bytes worked out by hand from Kafka's JSON schemas
(group-coordinator/src/main/resources/common/message/) and its generated
code's rules for flexible versions, round trips of every record type, tagged
fields Kafka adds later being skipped, and malformed bytes refused cleanly."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster.records import offsets_topic
from muster.records.modern_group_records import (
    RECORD_TYPES,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    PartitionMetadata,
    TopicMetadata,
    TopicPartitions,
    consumer_group_record,
    decode_consumer_group_key,
    decode_consumer_group_value,
    encode_consumer_group_key,
    encode_consumer_group_value,
)
from muster.records.offsets_topic import RecordFormatError

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_record_types_are_kafkas() -> None:
    assert {t: (k.__name__, v.__name__) for t, (k, v) in RECORD_TYPES.items()} == {
        3: ("ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue"),
        4: ("ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue"),
        5: ("ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue"),
        6: (
            "ConsumerGroupTargetAssignmentMetadataKey",
            "ConsumerGroupTargetAssignmentMetadataValue",
        ),
        7: ("ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue"),
        8: ("ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"),
        16: ("ConsumerGroupRegularExpressionKey", "ConsumerGroupRegularExpressionValue"),
    }


def test_keys_are_classic_encoding_with_the_record_type_as_version() -> None:
    assert encode_consumer_group_key(ConsumerGroupMemberMetadataKey("g", "m")) == h(
        "00050001 670001 6d"
    )
    assert encode_consumer_group_key(ConsumerGroupMetadataKey("grp")) == h("0003 0003 677270")
    assert encode_consumer_group_key(ConsumerGroupRegularExpressionKey("g", "t.*")) == h(
        "0010 0001 67 0003 742e2a"
    )


def test_current_member_assignment_value_bytes() -> None:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=5,
        previous_member_epoch=4,
        state=0,
        assigned_partitions=(TopicPartitions(TOPIC, (0, 2)),),
    )
    expected = h(
        "0000"  # value version 0
        "00000005 00000004 00"  # member epoch, previous epoch, state (int8)
        "02"  # compact array: 1 element (+1)
        "00112233445566778899aabbccddeeff"  # topic id: 16 bytes, most significant first
        "03 00000000 00000002"  # compact [int32]: 2 elements, no per-element tags
        "00"  # TopicPartitions' tagged fields: none
        "01"  # pending revocation: empty array
        "00"  # the value's tagged fields: none
    )
    assert encode_consumer_group_value(value) == expected
    assert decode_consumer_group_value(8, expected) == value


def test_member_metadata_value_bytes_with_the_tagged_classic_metadata() -> None:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=None,
        rack_id="r",
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("a", "b"),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=300,
        server_assignor="uniform",
        classic_member_metadata=ClassicMemberMetadata(45000, (ClassicProtocol("range", b"\x01"),)),
    )
    expected = h(
        "0000"
        "00"  # instance id: null (compact nullable string, 0)
        "02 72"  # rack "r": length 1 + 1
        "02 63"  # client id "c"
        "03 2f68"  # client host "/h"
        "03 0261 0262"  # subscribed names: 2 (+1), "a", "b"
        "00"  # regex: null
        "0000012c"  # rebalance timeout 300
        "08 756e69666f726d"  # server assignor "uniform"
        "01"  # one tagged field
        "00 10"  # tag 0, 16 bytes
        "01"  # nullable struct present
        "0000afc8"  # session timeout 45000
        "02 06 72616e6765 02 01 00"  # 1 protocol: "range", bytes 0x01, its tags
        "00"  # ClassicMemberMetadata's tags
    )
    assert encode_consumer_group_value(value) == expected
    assert decode_consumer_group_value(5, expected) == value
    # a consumer-protocol member: no tag at all
    plain = ConsumerGroupMemberMetadataValue(None, None, "c", "/h")
    assert encode_consumer_group_value(plain) == h("0000 00 00 0263 032f68 01 00 ffffffff 00 00")


def test_group_metadata_value_writes_the_hash_only_when_set() -> None:
    assert encode_consumer_group_value(ConsumerGroupMetadataValue(7)) == h("0000 00000007 00")
    with_hash = h("0000 00000007 01 00 08 0000000000000102")
    assert encode_consumer_group_value(ConsumerGroupMetadataValue(7, 0x102)) == with_hash
    assert decode_consumer_group_value(3, with_hash) == ConsumerGroupMetadataValue(7, 0x102)


def test_unknown_tags_from_newer_kafka_are_skipped() -> None:
    # tag 1 (CreationTimeMs in Kafka's trunk) and tag 0 MetadataHash, ascending
    data = h("0000 00000007 02 00 08 0000000000000009 01 08 0000019a00000000")
    assert decode_consumer_group_value(3, data) == ConsumerGroupMetadataValue(7, 9)


def test_regular_expression_and_assignment_metadata_values() -> None:
    value = ConsumerGroupRegularExpressionValue(("t1",), 12, 1700000000000)
    data = h("0000 02 03 7431 000000000000000c 0000018bcfe56800 00")
    assert encode_consumer_group_value(value) == data
    assert decode_consumer_group_value(16, data) == value
    target = ConsumerGroupTargetAssignmentMetadataValue(3)
    assert encode_consumer_group_value(target) == h("0000 00000003 00")


def test_each_key_decoder_reads_only_its_own_record_types() -> None:
    """offsets_topic.decode_key returns None for these record types (the shard
    hands them to the consumer groups' replay); decode_consumer_group_key reads
    them and returns None for an offset commit key."""
    key = encode_consumer_group_key(ConsumerGroupCurrentMemberAssignmentKey("g", "m"))
    assert offsets_topic.decode_key(key) is None
    assert decode_consumer_group_key(key) == ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    commit_key = offsets_topic.encode_key(offsets_topic.OffsetCommitKey("g", "t", 0))
    assert decode_consumer_group_key(commit_key) is None
    assert consumer_group_record(ConsumerGroupMetadataKey("g"), None) == (h("0003 0001 67"), None)


names = st.text(max_size=6)
ids = st.uuids()
partitions = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
topic_partitions = st.lists(st.builds(TopicPartitions, ids, partitions), max_size=3).map(tuple)
values = st.one_of(
    st.builds(
        ConsumerGroupMetadataValue,
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
    ),
    st.builds(
        ConsumerGroupPartitionMetadataValue,
        st.lists(
            st.builds(
                TopicMetadata,
                ids,
                names,
                st.integers(0, 1000),
                st.lists(
                    st.builds(
                        PartitionMetadata,
                        st.integers(0, 99),
                        st.lists(names, max_size=3).map(tuple),
                    ),
                    max_size=3,
                ).map(tuple),
            ),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(
        ConsumerGroupMemberMetadataValue,
        st.none() | names,
        st.none() | names,
        names,
        names,
        st.lists(names, max_size=4).map(tuple),
        st.none() | names,
        st.integers(-1, 2**31 - 1),
        st.none() | st.sampled_from(["uniform", "range"]),
        st.none()
        | st.builds(
            ClassicMemberMetadata,
            st.integers(0, 2**31 - 1),
            st.lists(st.builds(ClassicProtocol, names, st.binary(max_size=20)), max_size=3).map(
                tuple
            ),
        ),
    ),
    st.builds(ConsumerGroupTargetAssignmentMetadataValue, st.integers(-(2**31), 2**31 - 1)),
    st.builds(ConsumerGroupTargetAssignmentMemberValue, topic_partitions),
    st.builds(
        ConsumerGroupCurrentMemberAssignmentValue,
        st.integers(0, 2**31 - 1),
        st.integers(-1, 2**31 - 1),
        st.integers(0, 2),
        topic_partitions,
        topic_partitions,
    ),
    st.builds(
        ConsumerGroupRegularExpressionValue,
        st.lists(names, max_size=4).map(tuple),
        st.integers(0, 2**63 - 1),
        st.integers(0, 2**63 - 1),
    ),
)
VALUE_TYPES = {v: t for t, (_, v) in RECORD_TYPES.items()}


@settings(max_examples=300, deadline=None)
@given(values)
def test_every_value_round_trips(value: object) -> None:
    data = encode_consumer_group_value(value)
    assert decode_consumer_group_value(VALUE_TYPES[type(value)], data) == value


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(RECORD_TYPES)), names, names)
def test_every_key_round_trips(record_type: int, a: str, b: str) -> None:
    cls = RECORD_TYPES[record_type][0]
    key = cls(*(a, b)[: len(cls.__dataclass_fields__)])
    data = encode_consumer_group_key(key)
    assert data[:2] == record_type.to_bytes(2, "big")
    assert decode_consumer_group_key(data) == key


@settings(max_examples=200, deadline=None)
@given(values, st.data())
def test_truncated_or_padded_values_are_refused_cleanly(value: object, data: st.DataObject) -> None:
    encoded = encode_consumer_group_value(value)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(RecordFormatError):
        decode_consumer_group_value(VALUE_TYPES[type(value)], encoded[:cut])
    with pytest.raises(RecordFormatError):
        decode_consumer_group_value(VALUE_TYPES[type(value)], encoded + b"\x00")


def test_wrong_record_type_is_refused() -> None:
    with pytest.raises(RecordFormatError):
        decode_consumer_group_value(2, h("0000 00000007 00"))
    with pytest.raises(RecordFormatError):
        encode_consumer_group_key(offsets_topic.GroupMetadataKey("g"))


def test_keys_of_different_record_types_are_not_equal() -> None:
    assert ConsumerGroupMetadataKey("g") != offsets_topic.GroupMetadataKey("g")
    assert ConsumerGroupMetadataKey("g") == ConsumerGroupMetadataKey("g")
    assert ConsumerGroupMemberMetadataKey("g", "m") != ConsumerGroupCurrentMemberAssignmentKey(
        "g", "m"
    )
    assert repr(ConsumerGroupMemberMetadataKey("g", "m")).startswith(
        "ConsumerGroupMemberMetadataKey("
    )
