"""A connection keeps the last small frame of each API decoded, so that a
byte-identical repeat (a heartbeat, a metadata refresh) is not decoded again
(connection.py). What a client relies on: a repeat is still handled against
the broker's state now, not answered from the earlier one, and each answer
carries its own request's correlation id."""

from __future__ import annotations

import socket
import struct

from muster.protocol.client_codec import decode_response, encode_request
from tests.protocol.test_pipelining import read_frame
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic

METADATA = 3
UNKNOWN_TOPIC_OR_PARTITION = 3


def _metadata(correlation: int, name: str) -> bytes:
    body = {"topics": [{"name": name}], "allow_auto_topic_creation": False}
    return encode_request(METADATA, 9, correlation, "repeat", body)


def _ask(sock: socket.socket, frame: bytes, correlation: int) -> object:
    sock.sendall(frame)
    answer = read_frame(sock)
    assert struct.unpack_from(">i", answer)[0] == correlation
    return decode_response(METADATA, 9, answer)[1]


def test_a_repeated_frame_is_answered_from_the_state_of_now(shared_muster: MusterProcess) -> None:
    name, other = "repeat-later", "repeat-other"
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=30) as sock:
        first = _ask(sock, _metadata(1, name), 1)
        assert first.topics[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
        create_topic(shared_muster.bootstrap, name, 3)
        create_topic(shared_muster.bootstrap, other, 1)
        # the same bytes but the correlation id: now the topic exists
        again = _ask(sock, _metadata(2, name), 2)
        assert again.topics[0].error_code == 0
        assert len(again.topics[0].partitions) == 3
        # two frames of one API alternating: each answered for its own topic
        for correlation in range(3, 9):
            asked = name if correlation % 2 else other
            got = _ask(sock, _metadata(correlation, asked), correlation)
            assert got.topics[0].name == asked
            assert len(got.topics[0].partitions) == (3 if asked == name else 1)
