"""Receiving Kafka's size-prefixed frames with as few copies as possible.

asyncio's StreamReader copies every received byte three times (each recv
into a fresh bytes, that into its buffer, `readexactly` out of it, then
deletes the front of the buffer), which for a megabyte Fetch answer costs
about as much as reading its batch headers. `FrameProtocol` is a
BufferedProtocol: small frames are cut out of one reusable scratch buffer
(one copy, many frames per recv); a frame too large for it gets a buffer of
its own, and the socket reads straight into that.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

_SIZE = struct.Struct(">i")
SCRATCH = 256 * 1024

OnFrame = Callable[[memoryview], None]
OnLost = Callable[[Exception | None], None]


class FrameProtocol(asyncio.BufferedProtocol):
    """Calls `on_frame(frame)` with each frame's bytes (without its size, as
    a read-only memoryview, valid after the call: it is never reused) and
    `on_lost(exc)` once when the connection ends (exc None on a clean EOF)."""

    def __init__(self, on_frame: OnFrame, on_lost: OnLost) -> None:
        self.on_frame = on_frame
        self.on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._scratch = bytearray(SCRATCH)
        self._have = 0  # bytes of the scratch buffer that hold data
        self._large: bytearray | None = None  # a large frame being received in place
        self._filled = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large is not None:
            return memoryview(self._large)[self._filled :]
        return memoryview(self._scratch)[self._have :]

    def buffer_updated(self, nbytes: int) -> None:
        large = self._large
        if large is not None:
            self._filled += nbytes
            if self._filled == len(large):
                self._large = None
                self.on_frame(memoryview(large).toreadonly())
            return
        self._have += nbytes
        self._split()

    def _split(self) -> None:
        buf, have, pos = self._scratch, self._have, 0
        while have - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0:
                self._abort(ValueError(f"negative frame size {size}"))
                return
            start, end = pos + 4, pos + 4 + size
            if end <= have:
                with memoryview(buf) as view:
                    self.on_frame(memoryview(bytes(view[start:end])))
                pos = end
                continue
            if 4 + size > len(buf):  # cannot fit: receive the rest in its own buffer
                large = bytearray(size)
                large[: have - start] = buf[start:have]
                self._large, self._filled = large, have - start
                pos = have
            break
        if pos:  # keep the partial frame at the front (it fits: checked above)
            buf[: have - pos] = buf[pos:have]
            self._have = have - pos

    def _abort(self, exc: Exception) -> None:
        if self.transport is not None:
            self.transport.abort()
        self._report(exc)

    def _report(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
            self.on_lost(exc)

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._report(exc)
