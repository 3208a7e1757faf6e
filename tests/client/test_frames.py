"""FrameProtocol cuts a byte stream into size-prefixed frames whatever the
recv boundaries: many frames per recv, sizes split across recvs, frames
larger than its scratch buffer received in place, garbage sizes."""

from __future__ import annotations

import asyncio
import random
import struct

from muster.client.frames import SCRATCH, FrameProtocol


def framed(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


def feed(stream: bytes, cuts: list[int]) -> tuple[list[bytes], list[Exception | None]]:
    """Delivers `stream` in pieces ending at `cuts`, as recv_into would."""
    frames: list[bytes] = []
    lost: list[Exception | None] = []

    async def run() -> None:
        proto = FrameProtocol(lambda f: frames.append(bytes(f)), lost.append)
        pos = 0
        for end in [*cuts, len(stream)]:
            while pos < end:
                buf = proto.get_buffer(-1)
                n = min(len(buf), end - pos)
                assert n > 0
                buf[:n] = stream[pos : pos + n]
                proto.buffer_updated(n)
                pos += n
        proto.connection_lost(None)

    asyncio.run(run())
    return frames, lost


def test_frames_come_out_whole_whatever_the_recv_boundaries():
    rng = random.Random(4)
    sizes = [0, 1, 3, 4, 5, 100, SCRATCH - 4, SCRATCH - 3, SCRATCH, 3 * SCRATCH + 17]
    sizes += [rng.randrange(0, 3000) for _ in range(200)]
    rng.shuffle(sizes)
    payloads = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    stream = framed(payloads)
    for cuts in (
        [],  # one recv as large as the buffers allow
        list(range(1, len(stream), 1 + len(stream) // 5000)),  # tiny pieces
        sorted(rng.sample(range(1, len(stream)), 300)),
        [2, 3, 6],  # the first size header split
    ):
        frames, lost = feed(stream, cuts)
        assert frames == payloads
        assert lost == [None]


def test_negative_size_ends_the_connection_once():
    frames, lost = feed(framed([b"ok"]) + struct.pack(">i", -5) + b"rest", [])
    assert frames == [b"ok"]
    assert len(lost) == 1 and "negative frame size" in str(lost[0])
