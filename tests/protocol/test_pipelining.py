"""Pipelined requests on one connection are answered in request order, even
when an earlier one (a long-polling Fetch) finishes later than a later one."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import time

from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v9.request import MetadataRequest
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_reader, entity_writer

from muster.protocol.codec import response_schema
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic


def frame(api_key: int, version: int, correlation: int, body: object, flexible: bool) -> bytes:
    buf = io.BytesIO()
    if flexible:
        entity_writer(HeaderV2)(
            buf,
            HeaderV2(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=correlation,
                client_id="pipe",
            ),
        )
    else:
        entity_writer(HeaderV1)(
            buf,
            HeaderV1(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=correlation,
                client_id="pipe",
            ),
        )
    entity_writer(type(body))(buf, body)
    data = buf.getvalue()
    return struct.pack(">i", len(data)) + data


def long_poll_fetch(topic: str, max_wait_ms: int) -> FetchRequest:
    """Fetch v11 of partition 0 from offset 0: parked until data or max_wait."""
    return FetchRequest(
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(
                    FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def test_answers_follow_request_order(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "pipelined")
    fetch = long_poll_fetch("pipelined", 800)
    metadata = MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(
            frame(1, 11, 101, fetch, flexible=False)
            + frame(3, 9, 102, metadata, flexible=True)
            + frame(3, 9, 103, metadata, flexible=True)
        )
        first = read_frame(sock)
        waited = time.monotonic() - started
        second, third = read_frame(sock), read_frame(sock)
    correlations = [struct.unpack_from(">i", f)[0] for f in (first, second, third)]
    assert correlations == [101, 102, 103]
    # the empty partition made the fetch wait out max_wait before anything was answered
    assert waited >= 0.7
    # the answers parse as their versions: Metadata v9 uses response header v1
    meta, _size = entity_reader(response_schema(3, 9))(second, 5)
    assert "pipelined" in {t.name for t in meta.topics}
    fetched, _size = entity_reader(response_schema(1, 11))(first, 4)
    assert fetched.responses[0].partitions[0].records in (None, b"")
