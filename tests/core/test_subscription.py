"""ConsumerProtocol subscription/assignment metadata."""

from __future__ import annotations

import pytest

from muster.coordinator.groups.subscription import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscribed_topics,
)


def test_v0_golden() -> None:
    data = encode_subscription(["t"], b"u")
    assert data == bytes.fromhex("0000000000010001740000000175")
    assert decode_subscription(data) == Subscription(0, ("t",), b"u")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_all_versions_round_trip(version: int) -> None:
    owned = (("t", (0, 2)),) if version >= 1 else ()
    data = encode_subscription(
        ["t", "u"],
        None,
        version=version,
        owned_partitions=owned,
        generation_id=7 if version >= 2 else -1,
        rack_id="r1" if version >= 3 else None,
    )
    sub = decode_subscription(data)
    assert sub == Subscription(
        version, ("t", "u"), None, owned, 7 if version >= 2 else -1, "r1" if version >= 3 else None
    )
    assert subscribed_topics(data) == frozenset({"t", "u"})


def test_newer_versions_and_garbage() -> None:
    # a future version keeps the prefix: the topics still read
    data = encode_subscription(["x"], None, version=3, rack_id="r") + b"\x00\x00extra"
    assert subscribed_topics(data) == frozenset({"x"})
    assert decode_subscription(b"") is None
    assert decode_subscription(b"\x00\x00\x00\x00\x00\x05\x00") is None
    assert subscribed_topics(b"\xff\xff") is None
    # topics only (some clients send no user data at all)
    assert decode_subscription(b"\x00\x00\x00\x00\x00\x00") == Subscription(0, ())


def test_assignment() -> None:
    data = encode_assignment((("t", (0, 1)), ("u", (3,))), b"x")
    assert decode_assignment(data) == Assignment(0, (("t", (0, 1)), ("u", (3,))), b"x")
    assert decode_assignment(b"") == Assignment(0)
    assert decode_assignment(b"\x00") is None
