"""The floor: a Kafka-wire server in Python that does nothing but answer.

Every OffsetCommit gets a canned answer: the first commit of a given shape
(API version and frame length; a sync-commit loop sends the same group, topic
and partition each time, only the offset changes) is decoded with muster's
codec and its answer encoded once; every later one is answered from that cache
with only the correlation id written in. No coordinator, no record, no disk.
The commit frame is kept as it came (a reference, no parsing), so an
OffsetFetch afterwards can read the last offset back and the committers'
read-back check still holds.

The other requests a client needs to reach its commit loop (ApiVersions,
Metadata, FindCoordinator, CreateTopics, OffsetFetch) are decoded and encoded
through muster's codec: they happen a few times per run and do not count.

Two framings, to show what the stream layer costs:

* ``protocol`` (default): an ``asyncio.Protocol`` whose ``data_received``
  parses every whole frame out of one buffer and writes the answers with one
  ``transport.write`` — no StreamReader, no future or task per request;
* ``streams``: ``asyncio.start_server`` with ``readexactly(4)`` +
  ``readexactly(size)`` and ``writer.write`` per request, as muster reads.

    python bench/floor_server.py --port 9999 --loop uvloop --framing protocol
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from muster.protocol.codec import decode_request, encode_response
from muster.protocol.header import is_flexible, parse_request_header

_HEAD = struct.Struct(">hhi")  # api key, version, correlation id
_SIZE = struct.Struct(">i")
OFFSET_COMMIT, OFFSET_FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS, CREATE_TOPICS = (
    8,
    9,
    3,
    10,
    18,
    19,
)
VERSIONS = {
    OFFSET_COMMIT: (0, 9),
    OFFSET_FETCH: (0, 9),
    METADATA: (0, 12),
    FIND_COORDINATOR: (0, 6),
    API_VERSIONS: (0, 3),
    CREATE_TOPICS: (2, 7),
}


class Floor:
    """The answers, shared by every connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        # (version, frame length) -> the answer body after the correlation id
        # (the flexible header's tag byte included)
        self.canned: dict[tuple[int, int], bytes] = {}
        self.last_commit: dict[tuple[int, int], bytes] = {}  # the frame, for read-back

    def answer(self, frame: bytes) -> bytes:
        """The whole answer frame (size prefix included) to one request frame."""
        api_key, version, correlation_id = _HEAD.unpack_from(frame, 0)
        if api_key == OFFSET_COMMIT:
            key = (version, len(frame))
            self.last_commit[key] = frame
            tail = self.canned.get(key)
            if tail is None:
                tail = self.canned[key] = self._slow(frame, api_key, version)
            return _SIZE.pack(4 + len(tail)) + _SIZE.pack(correlation_id) + tail
        tail = self._slow(frame, api_key, version)
        return _SIZE.pack(4 + len(tail)) + _SIZE.pack(correlation_id) + tail

    def _slow(self, frame: bytes, api_key: int, version: int) -> bytes:
        flexible = is_flexible(api_key, version)
        header = parse_request_header(frame, flexible)
        req = decode_request(api_key, version, frame, header.body_offset)
        body = encode_response(api_key, version, self._payload(api_key, version, req))
        tag = b"\x00" if flexible and api_key != API_VERSIONS else b""
        return tag + body

    def _payload(self, api_key: int, version: int, req: Any) -> dict[str, Any]:
        node = {"node_id": 0, "host": self.host, "port": self.port, "error_code": 0}
        if api_key == API_VERSIONS:
            keys = [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(VERSIONS.items())
            ]
            return {"error_code": 0, "api_keys": keys, "throttle_time": 0}
        if api_key == METADATA:
            names = [t.name for t in req.topics or ()]
            return {
                "throttle_time": 0,
                "brokers": [{"node_id": 0, "host": self.host, "port": self.port, "rack": None}],
                "cluster_id": "floor",
                "controller_id": 0,
                "topics": [_topic(name) for name in names],
            }
        if api_key == FIND_COORDINATOR:
            if version >= 4:
                return {"coordinators": [{"key": k, **node} for k in req.coordinator_keys]}
            return dict(node)
        if api_key == CREATE_TOPICS:
            return {"topics": [{"name": t.name, "error_code": 0} for t in req.topics]}
        if api_key == OFFSET_COMMIT:
            return {
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": p.partition_index, "error_code": 0}
                            for p in t.partitions
                        ],
                    }
                    for t in req.topics
                ]
            }
        if api_key == OFFSET_FETCH:
            return self._offset_fetch(version, req)
        raise ValueError(f"the floor server does not answer api {api_key}")

    def _offset_fetch(self, version: int, req: Any) -> dict[str, Any]:
        committed: dict[tuple[str, str, int], int] = {}
        for (v, _), frame in self.last_commit.items():
            header = parse_request_header(frame, is_flexible(OFFSET_COMMIT, v))
            c = decode_request(OFFSET_COMMIT, v, frame, header.body_offset)
            for t in c.topics:
                for p in t.partitions:
                    committed[(c.group_id, t.name, p.partition_index)] = p.committed_offset

        def topics(group: str, asked: Any) -> list[dict[str, Any]]:
            return [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": i,
                            "committed_offset": committed.get((group, t.name, i), -1),
                            "metadata": "",
                            "error_code": 0,
                        }
                        for i in t.partition_indexes
                    ],
                }
                for t in asked or ()
            ]

        if version >= 8:
            return {
                "groups": [
                    {"group_id": g.group_id, "topics": topics(g.group_id, g.topics)}
                    for g in req.groups
                ]
            }
        return {"topics": topics(req.group_id, req.topics), "error_code": 0}


def _topic(name: str) -> dict[str, Any]:
    part = {"partition_index": 0, "leader_id": 0, "replica_nodes": [0], "isr_nodes": [0]}
    return {"error_code": 0, "name": name, "partitions": [{"error_code": 0, **part}]}


class FloorProtocol(asyncio.Protocol):
    """Frames out of one buffer; every whole one answered at once, in order."""

    def __init__(self, floor: Floor) -> None:
        self.floor = floor
        self.buf = bytearray()
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        out = []
        start = 0
        while len(buf) - start >= 4:
            (size,) = _SIZE.unpack_from(buf, start)
            end = start + 4 + size
            if len(buf) < end:
                break
            out.append(self.floor.answer(bytes(buf[start + 4 : end])))
            start = end
        del buf[:start]
        if out and self.transport is not None:
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))


async def serve_streams(floor: Floor, reader: asyncio.StreamReader, writer: Any) -> None:
    try:
        while True:
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            writer.write(floor.answer(await reader.readexactly(size)))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main_async(args: argparse.Namespace) -> None:
    floor = Floor(args.host, args.port)
    loop = asyncio.get_running_loop()
    if args.framing == "streams":
        server = await asyncio.start_server(
            lambda r, w: serve_streams(floor, r, w), args.host, args.port
        )
    else:
        server = await loop.create_server(lambda: FloorProtocol(floor), args.host, args.port)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--framing", choices=("protocol", "streams"), default="protocol")
    args = ap.parse_args()
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(main_async(args))
    else:
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
