"""The request header read with struct gives what kio's reader gives, and
refuses (DecodeError) what kio's reader, behind the bounds walk, refuses."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_reader, entity_writer

from muster.protocol.bounds import check_request, skip_tagged_fields
from muster.protocol.codec import DecodeError
from muster.protocol.header import parse_request_header


def _kio(frame: bytes, flexible: bool) -> tuple[int, int, int, str | None, int] | None:
    """kio's reading (the reference): None where it refuses the frame."""
    schema = HeaderV2 if flexible else HeaderV1
    try:
        check_request(schema, frame, 0)
        header, size = entity_reader(schema)(frame, 0)
    except KeyError as exc:
        # kio refuses a tagged field it has no name for; Kafka's RequestHeaderData
        # keeps unknown tags and reads on, and so must muster: v2's fields are
        # v1's, then the tagged section (already bounds-checked above)
        assert "Unknown tagged field" in str(exc)
        header, tags_at = entity_reader(HeaderV1)(frame, 0)
        size = skip_tagged_fields(frame, tags_at, len(frame))
    except Exception:
        return None
    return (
        header.request_api_key,
        header.request_api_version,
        header.correlation_id,
        header.client_id,
        size,
    )


def _ours(frame: bytes, flexible: bool) -> tuple[int, int, int, str | None, int] | None:
    try:
        h = parse_request_header(frame, flexible)
    except DecodeError:
        return None
    return (h.api_key, h.api_version, h.correlation_id, h.client_id, h.body_offset)


def _written(client_id: str | None, flexible: bool, key: int = 8, version: int = 9) -> bytes:
    schema = HeaderV2 if flexible else HeaderV1
    buf = io.BytesIO()
    entity_writer(schema)(
        buf,
        schema(
            request_api_key=key,
            request_api_version=version,
            correlation_id=77,
            client_id=client_id,
        ),
    )
    return buf.getvalue()


@settings(max_examples=200, deadline=None)
@given(
    client_id=st.none() | st.text(max_size=30),
    flexible=st.booleans(),
    body=st.binary(max_size=8),
)
def test_written_headers_read_back_as_kio_reads_them(
    client_id: str | None, flexible: bool, body: bytes
) -> None:
    frame = _written(client_id, flexible) + body
    assert _ours(frame, flexible) == _kio(frame, flexible)
    assert _ours(frame, flexible) is not None
    assert parse_request_header(frame, flexible).client_id == client_id


_tails = st.sampled_from(
    [
        b"",
        b"\x00",
        b"\x01\x00\x00",
        b"\x01\x05\x02ab",
        b"\x02\x00\x01x\x01\x00",
        b"\xff\xff",
        b"\x80",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    size=st.integers(-3, 40) | st.sampled_from([0x7FFF, -0x8000]),
    raw=st.binary(max_size=40) | st.sampled_from([b"\xc3\x28", b"caf\xc3\xa9", b"\xff"]),
    tail=_tails,
    flexible=st.booleans(),
)
def test_hostile_headers_are_refused_as_kio_refuses_them(
    size: int, raw: bytes, tail: bytes, flexible: bool
) -> None:
    frame = struct.pack(">hhih", 8, 9, 5, size) + raw + tail
    assert _ours(frame, flexible) == _kio(frame, flexible)


@pytest.mark.parametrize("cut", range(10))
def test_a_frame_shorter_than_the_fixed_fields_is_refused(cut: int) -> None:
    frame = _written("client", False)[:cut]
    with pytest.raises(DecodeError):
        parse_request_header(frame, False)
