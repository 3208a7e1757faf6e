"""The connection layer (framing, correlation, pipelining, negotiation,
disconnects), the codec's client direction, errors and the partitioner."""

from __future__ import annotations

import asyncio
import struct
import warnings
from pathlib import Path

import pytest

from muster.client import errors
from muster.client.net import Cluster, Connection, client_versions, parse_bootstrap
from muster.client.partitioner import murmur2, partition_for_key
from muster.protocol.client_codec import decode_response, encode_request
from muster.protocol.codec import encode_response
from muster.protocol.header import parse_request_header, response_header
from tests.support.imports import imported_modules

with warnings.catch_warnings():  # kafka-python's import is noisy
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

# Kafka's UtilsTest.testMurmur2 vectors (the Java client's partitioner hash).
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_java_vectors():
    for key, expected in JAVA_MURMUR2.items():
        assert murmur2(key) == expected


def test_murmur2_matches_kafka_python_on_many_keys():
    for i in range(2000):
        key = (b"key-%d-" % i) * (i % 7)
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)
        assert 0 <= partition_for_key(key, 13) < 13


def test_codec_round_trip_through_the_server_side():
    frame = encode_request(3, 12, 42, "me", {"topics": None, "allow_auto_topic_creation": False})
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    header = parse_request_header(frame[4:], flexible=True)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 12, 42)
    assert header.client_id == "me"
    body = encode_response(3, 12, {"brokers": [{"node_id": 1, "host": "h", "port": 1}]})
    cid, response = decode_response(3, 12, response_header(42, 3, True) + body)
    assert cid == 42 and response.brokers[0].host == "h"
    # ApiVersions answers with header v0 even at flexible versions (KIP-511)
    body = encode_response(18, 3, {"api_keys": []})
    cid, response = decode_response(18, 3, response_header(7, 18, True) + body)
    assert cid == 7 and response.error_code == 0


def test_bootstrap_parsing():
    assert parse_bootstrap("a:1, b:2,PLAINTEXT://c:3") == [("a", 1), ("b", 2), ("c", 3)]
    with pytest.raises(ValueError):
        parse_bootstrap(" , ")


def test_error_families():
    e = errors.error_for(16)
    assert isinstance(e, errors.CoordinatorError) and e.retriable and e.code == 16
    assert isinstance(errors.error_for(27), errors.RebalanceError)
    assert isinstance(errors.error_for(6), errors.LeadershipError)
    unknown_topic = errors.error_for(3, "t")
    assert isinstance(unknown_topic, errors.TopicError) and unknown_topic.retriable
    fenced = errors.error_for(82)
    assert isinstance(fenced, errors.FencedInstanceError) and not fenced.retriable
    assert isinstance(errors.error_for(45), errors.SequenceError)
    assert not errors.error_for(36).retriable  # TOPIC_ALREADY_EXISTS
    assert isinstance(errors.error_for(9999), errors.KafkaError)
    assert all(issubclass(c, errors.KafkaError) for c in (errors.KafkaConnectionError,))
    errors.raise_for(0)
    with pytest.raises(errors.OffsetError):
        errors.raise_for(1)


def test_client_core_is_pure():
    """client/core imports no asyncio, sockets, threads or clocks."""
    core = Path(__file__).parents[2] / "src" / "muster" / "client" / "core"
    banned = {"asyncio", "socket", "threading", "time", "selectors", "muster.client.net"}
    for path in core.glob("*.py"):
        for name in imported_modules(path):
            assert name.split(".")[0] not in banned and name not in banned, (path, name)


async def _fake_broker(handler):
    """A tiny broker speaking ApiVersions then handing frames to `handler`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, cid = struct.unpack_from(">hhi", frame)
                if api_key == 18:
                    body = encode_response(
                        18,
                        version,
                        {
                            "api_keys": [
                                {"api_key": 18, "min_version": 0, "max_version": 3},
                                {"api_key": 3, "min_version": 0, "max_version": 5},
                            ]
                        },
                    )
                    out = response_header(cid, 18, True) + body
                    writer.write(struct.pack(">i", len(out)) + out)
                    continue
                await handler(api_key, version, cid, writer)
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _metadata_reply(cid: int, version: int, host: str) -> bytes:
    body = encode_response(3, version, {"brokers": [{"node_id": 1, "host": host, "port": 1}]})
    out = response_header(cid, 3, version >= 9) + body
    return struct.pack(">i", len(out)) + out


def test_negotiation_pipelining_and_out_of_order_answers():
    async def main() -> None:
        held: list[tuple[int, int, asyncio.StreamWriter]] = []

        async def handler(api_key, version, cid, writer):
            held.append((cid, version, writer))
            if len(held) == 3:  # answer the three pipelined requests in reverse
                for cid_, v, w in reversed(held):
                    w.write(_metadata_reply(cid_, v, f"h{cid_}"))

        server, port = await _fake_broker(handler)
        conn = await Connection("127.0.0.1", port).connect()
        assert conn.version_for(3) == 5  # highest common: broker max 5
        assert conn.version_for(18) == 3
        with pytest.raises(errors.UnsupportedError):
            conn.version_for(19)
        futures = [conn.send_nowait(3, {"topics": []}) for _ in range(3)]
        assert conn.in_flight == 3
        responses = await asyncio.gather(*futures)
        cids = [cid for cid, _, _ in held]
        assert [r.brokers[0].host for r in responses] == [f"h{c}" for c in cids]
        await conn.close()
        server.close()

    asyncio.run(main())


def test_disconnect_fails_every_pending_request():
    async def main() -> None:
        async def handler(api_key, version, cid, writer):
            writer.transport.abort()  # the broker dies mid-request

        server, port = await _fake_broker(handler)
        conn = await Connection("127.0.0.1", port).connect()
        futures = [conn.send_nowait(3, {"topics": []}) for _ in range(2)]
        for future in futures:
            with pytest.raises(errors.KafkaConnectionError):
                await future
        assert not conn.connected
        with pytest.raises(errors.KafkaConnectionError):
            await conn.send(3, {"topics": []})
        server.close()

    asyncio.run(main())


def test_unreachable_bootstrap_is_a_connection_error():
    async def main() -> None:
        cluster = Cluster("127.0.0.1:1")
        with pytest.raises(errors.KafkaConnectionError):
            await cluster.refresh_metadata([])

    asyncio.run(main())


def test_client_versions_cover_the_apis_used():
    for api_key in (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 37, 42, 47):
        low, high = client_versions(api_key)
        assert 0 <= low <= high


def test_metadata_refresh_against_muster(muster_broker):
    async def main() -> None:
        cluster = Cluster(muster_broker.bootstrap)
        await cluster.refresh_metadata(None)
        assert cluster.brokers and "__consumer_offsets" in cluster.topics
        conn = await cluster.any_connection()
        assert conn.version_for(1) == 12  # Fetch: capped at the client's max
        await cluster.close()

    asyncio.run(main())
