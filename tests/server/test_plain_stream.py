"""A plaintext connection cuts frames out of whatever the socket delivers
(plain_stream.py): several whole frames in one receive, one frame over many,
a big one that is decoded in a worker thread; answers leave in request order,
and a connection owing too many answers (or whose client does not read them)
stops reading until it can send again."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from muster.protocol.client_codec import decode_response, encode_request
from tests.protocol.test_pipelining import frame, long_poll_fetch, read_frame
from tests.support.brokers import MusterProcess, peer_closed
from tests.wire.clients import create_topic

API_VERSIONS, METADATA, FETCH = 18, 3, 1


def _api_versions(correlation: int) -> bytes:
    body = {"client_software_name": "plain", "client_software_version": "1"}
    return encode_request(API_VERSIONS, 3, correlation, "plain", body)


def _metadata(correlation: int, names: list[str]) -> bytes:
    body = {
        "topics": [{"name": n, "topic_id": None} for n in names],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return encode_request(METADATA, 12, correlation, "plain", body)


def _correlation(answer: bytes) -> int:
    return int(struct.unpack_from(">i", answer)[0])


def _decoded(answer: bytes, api_key: int, version: int) -> Any:
    return decode_response(api_key, version, answer)[1]


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def test_many_whole_frames_in_one_send_are_answered_in_request_order(
    shared_muster: MusterProcess,
) -> None:
    requests = [_api_versions(i) if i % 2 else _metadata(i, [f"absent-{i}"]) for i in range(1, 201)]
    with _connect(shared_muster.port) as sock:
        sock.sendall(b"".join(requests))
        answers = [read_frame(sock) for _ in requests]
    assert [_correlation(a) for a in answers] == list(range(1, 201))
    meta = _decoded(answers[1], METADATA, 12)
    assert [t.name for t in meta.topics] == ["absent-2"]
    versions = _decoded(answers[0], API_VERSIONS, 3)
    assert versions.error_code == 0 and len(versions.api_keys) > 10


def test_frames_split_anywhere_across_sends_are_answered(shared_muster: MusterProcess) -> None:
    # a big Metadata request (decoded in a worker thread), then two small ones
    names = [f"absent-topic-with-a-long-name-{i:06d}" for i in range(5_000)]
    big = _metadata(7, names)
    assert len(big) > 128 * 1024
    stream = _api_versions(5) + big + _api_versions(8) + _metadata(9, ["m"])
    # pieces of every size from 1 byte, so a boundary falls inside the size
    # prefix, inside a header and inside the big frame's body
    with _connect(shared_muster.port) as sock:
        pos, step = 0, 1
        while pos < len(stream):
            sock.sendall(stream[pos : pos + step])
            pos += step
            step = step * 3 + 1 if step < 60_000 else 1
            time.sleep(0.001)
        answers = [read_frame(sock) for _ in range(4)]
    assert [_correlation(a) for a in answers] == [5, 7, 8, 9]
    meta = _decoded(answers[1], METADATA, 12)
    assert [t.name for t in meta.topics] == names
    assert _decoded(answers[3], METADATA, 12).topics[0].name == "m"


def test_more_requests_parked_than_the_pipelining_limit_wait_their_turn(
    shared_muster: MusterProcess,
) -> None:
    # Long polls of an empty partition: each is parked for max_wait. At most
    # 128 are parked at once; the connection reads the rest only as answers
    # leave, so 400 of them take ~4 rounds of max_wait, in order.
    create_topic(shared_muster.bootstrap, "parked")
    n, wait_ms = 400, 400
    fetch = long_poll_fetch("parked", wait_ms)
    with _connect(shared_muster.port) as sock:
        started = time.monotonic()
        sock.sendall(b"".join(frame(1, 11, i, fetch, flexible=False) for i in range(n)))
        answers = [read_frame(sock) for _ in range(n)]
        elapsed = time.monotonic() - started
    assert [_correlation(a) for a in answers] == list(range(n))
    assert elapsed >= 3 * wait_ms / 1000 * 0.9  # not all parked at once
    fetched = _decoded(answers[-1], FETCH, 11)
    assert fetched.responses[0].partitions[0].error_code == 0


def test_a_client_that_does_not_read_its_answers_is_not_read_either(
    shared_muster: MusterProcess,
) -> None:
    # 60,000 ApiVersions requests (1.7 MB) sent at once, ~27 MB of answers.
    # Once the client's receive buffer and the broker's send buffers are
    # full, the broker stops reading (and working): its CPU goes idle while
    # the client reads nothing, rather than answers piling up in its memory.
    n = 60_000
    requests = b"".join(_api_versions(i) for i in range(n))
    assert shared_muster.proc is not None
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(60)
        sock.connect(("127.0.0.1", shared_muster.port))
        sender = threading.Thread(target=sock.sendall, args=(requests,), daemon=True)
        start_cpu = _cpu_s(shared_muster.proc.pid)
        sender.start()
        # The buffers fill in ~2 s on an idle machine, later on a busy one:
        # the broker must then go idle, however long it took, having done
        # only the share of the work whose answers the buffers hold.
        busy, deadline = 1.0, time.monotonic() + 30
        while busy >= 0.15 and time.monotonic() < deadline:
            before = _cpu_s(shared_muster.proc.pid)
            time.sleep(1.0)
            busy = _cpu_s(shared_muster.proc.pid) - before
        parked_cpu = _cpu_s(shared_muster.proc.pid) - start_cpu
        answers = _read_correlations(sock, n)
        sender.join(10)
    total_cpu = _cpu_s(shared_muster.proc.pid) - start_cpu
    assert busy < 0.15, f"the broker worked {busy:.2f} s of the second nobody read its answers"
    assert answers == list(range(n))
    print(f"CPU before idle {parked_cpu:.2f} s, in all {total_cpu:.2f} s")
    assert parked_cpu < total_cpu / 2, "the broker answered (nearly) everything nobody read"


def _read_correlations(sock: socket.socket, n: int) -> list[int]:
    """The correlation ids of ``n`` answers, read in large receives: a 4 KiB
    window drained one frame at a time leaves the sender waiting on TCP's
    window probes (tens of seconds for 27 MB)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    buf, out, pos = bytearray(), [], 0
    while len(out) < n:
        chunk = sock.recv(1 << 20)
        assert chunk, "connection closed"
        buf += chunk
        while len(buf) - pos >= 8:
            (size,) = struct.unpack_from(">i", buf, pos)
            if len(buf) - pos < 4 + size:
                break
            out.append(struct.unpack_from(">i", buf, pos + 4)[0])
            pos += 4 + size
        del buf[:pos]
        pos = 0
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        (struct.pack(">i", -5), "frame of -5 bytes (limit"),
        (struct.pack(">i", 200 << 20), f"frame of {200 << 20} bytes (limit"),
        (b"\x16\x03\x01\x02", "a TLS handshake on PLAINTEXT listener"),
    ],
)
def test_a_refused_frame_size_closes_with_one_log_line(
    shared_muster: MusterProcess, prefix: bytes, line: str
) -> None:
    with _connect(shared_muster.port) as sock:
        # a good request first, then the bad size split over two sends
        sock.sendall(_api_versions(1) + prefix[:2])
        assert _correlation(read_frame(sock)) == 1
        time.sleep(0.05)
        sock.sendall(prefix[2:] + b"\x00" * 8)
        assert peer_closed(sock, 10)
    deadline = time.monotonic() + 5
    while line not in shared_muster.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = shared_muster.log_text()
    assert line in log
    assert "Traceback" not in log


def test_confluent_producer_with_many_requests_in_flight_round_trips(
    shared_muster: MusterProcess,
) -> None:
    from confluent_kafka import Consumer, Producer

    create_topic(shared_muster.bootstrap, "burst", partitions=4)
    producer = Producer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "linger.ms": 5,
            "batch.size": 64 * 1024,
            "max.in.flight.requests.per.connection": 5,
            "enable.idempotence": False,
        }
    )
    sent = [i.to_bytes(4, "big") * 256 for i in range(20_000)]  # 1 KiB each
    for i, value in enumerate(sent):
        while True:
            try:
                producer.produce("burst", value, partition=i % 4)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "group.id": "burst-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["burst"])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)
