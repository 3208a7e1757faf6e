"""Old versions kio no longer ships still work on the wire: OffsetCommit v0/v1,
OffsetFetch v0 and ListOffsets v0 (sent by Burrow's sarama and old clients)."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader
from kio.serial import entity_reader, entity_writer

from muster.protocol.codec import build, request_schema, response_schema
from tests.protocol.test_pipelining import read_frame
from tests.support.brokers import MusterProcess
from tests.wire.clients import confluent_produce, create_topic


def call(sock: socket.socket, api_key: int, version: int, body: dict[str, Any]) -> Any:
    schema = request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(RequestHeader)(
        buf,
        RequestHeader(
            request_api_key=api_key, request_api_version=version, correlation_id=7, client_id="old"
        ),
    )
    entity_writer(schema)(buf, build(schema, body))
    data = buf.getvalue()
    sock.sendall(struct.pack(">i", len(data)) + data)
    frame = read_frame(sock)
    assert struct.unpack_from(">i", frame)[0] == 7
    answer, _size = entity_reader(response_schema(api_key, version))(frame, 4)
    return answer


def test_legacy_commit_fetch_and_list_offsets(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "legacy", partitions=2)
    confluent_produce(shared_muster.bootstrap, "legacy", [(1, None, b"x", [])] * 9)
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=10) as sock:
        commit_v1 = call(
            sock,
            8,
            1,
            {
                "group_id": "old-group",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {
                        "name": "legacy",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 3,
                                "commit_timestamp": -1,
                                "committed_metadata": "v1",
                            }
                        ],
                    }
                ],
            },
        )
        assert commit_v1.topics[0].partitions[0].error_code == 0
        commit_v0 = call(
            sock,
            8,
            0,
            {
                "group_id": "old-group",
                "topics": [
                    {
                        "name": "legacy",
                        "partitions": [
                            {
                                "partition_index": 1,
                                "committed_offset": 4,
                                "committed_metadata": "v0",
                            },
                            {
                                "partition_index": 7,
                                "committed_offset": 1,
                                "committed_metadata": None,
                            },
                        ],
                    }
                ],
            },
        )
        errors = {p.partition_index: p.error_code for p in commit_v0.topics[0].partitions}
        assert errors == {1: 0, 7: 3}  # partition 7 does not exist: UNKNOWN_TOPIC_OR_PARTITION
        fetched = call(
            sock,
            9,
            0,
            {
                "group_id": "old-group",
                "topics": [{"name": "legacy", "partition_indexes": [0, 1]}],
            },
        )
        got = {
            p.partition_index: (p.committed_offset, p.metadata, p.error_code)
            for p in fetched.topics[0].partitions
        }
        assert got == {0: (3, "v1", 0), 1: (4, "v0", 0)}
        listed = call(
            sock,
            2,
            0,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "name": "legacy",
                        "partitions": [
                            {"partition_index": 1, "timestamp": -1, "max_num_offsets": 1},
                            {"partition_index": 1, "timestamp": -2, "max_num_offsets": 1},
                        ],
                    }
                ],
            },
        )
        offsets = [p.old_style_offsets for p in listed.topics[0].partitions]
        assert offsets == [(9,), (0,)]


def test_legacy_response_decodes_with_the_client_codec() -> None:
    # the response header of a legacy schema is ResponseHeader v0 (correlation id
    # only): muster's client codec reads OffsetCommit v0 answers (kafka-diff)
    from muster.protocol.client_codec import decode_response
    from muster.protocol.codec import encode_response

    body = encode_response(8, 0, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 3}]}]})
    corr, entity = decode_response(8, 0, struct.pack(">i", 7) + body)
    assert corr == 7 and entity.topics[0].partitions[0].error_code == 3
