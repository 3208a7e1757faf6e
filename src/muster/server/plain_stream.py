"""One plaintext connection, server side: a protocol that cuts request frames
out of what the socket delivers and hands each whole one to the connection
right there, in the loop's callback for the receive.

Why not asyncio's streams: `readexactly(4)` + `readexactly(size)` in a
coroutine costs each request two turns of the loop (the receive feeds the
StreamReader and wakes the reading task; the next turn runs it), a future and
a task step, ~14 µs of broker CPU per small request (bench/floor_server.py).
Here a small request is cut, decoded, handled and usually answered within the
one callback that received it.

Frames whole in one receive are sliced out of it (a copy of the frame, as
`readexactly` made); the receives of a frame that spans several are kept as
they came and joined once it is whole, so a megabyte Produce is copied once
(the stream layer copied it twice), and memory follows the bytes received,
not the size a prefix claims.

glibc serves a block over its mmap threshold with fresh pages (a page fault
per 4 KiB) and raises that threshold (128 KiB at first) only when such a
block is freed. A StreamReader's buffer, grown past a megabyte and shrunk,
raised it as a side effect; the joined frames alone left it just under a
megabyte, so each 1 MB Produce frame, its records and each Fetch read came
from fresh pages (broker CPU per GB +60% produced, +100% fetched,
rdkafka_performance with 1 KiB records). `prime_allocator` frees one 4 MiB
block once, as that buffer did, and glibc's own adjustment does the rest.

While the connection holds (answers owed past its pipelining limit,
a full send buffer, a big frame decoding in a worker thread), the transport
stops reading and what was received stays buffered, in arrival order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

# what the connection waits for, as its idle watchdog reads it
SIZE, BODY, BLOCKED = 0, 1, 2

Accept = Callable[[Any, Any], Awaitable[None]]


_PRIME_BYTES = 4 << 20
_primed = False


def prime_allocator() -> None:
    """Raises glibc's dynamic mmap threshold to 4 MiB, once (see above)."""
    global _primed
    if not _primed:
        _primed = True
        block = bytearray(_PRIME_BYTES)
        del block


class FrameSink(Protocol):
    """The connection's side, as the stream calls it."""

    def frame_size(self, prefix: bytes) -> int:
        """The frame's size from its 4-byte prefix; raises if it is refused."""

    def frame(self, frame: bytes | memoryview) -> None:
        """One whole request frame; may call `hold()` before returning."""

    def writable(self) -> None:
        """The send buffer has room again."""


class PlainStream(asyncio.Protocol):
    """The server side of one plaintext connection, also its writer;
    `accept(self, self)` runs as a task once TCP is connected."""

    def __init__(self, accept: Accept) -> None:
        self._accept = accept
        self.transport: Any = None  # uvloop's is no asyncio.Transport
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._sink: FrameSink | None = None
        # bytes received and not yet cut into frames: _pending[_pos:]
        self._pending: bytes | bytearray | memoryview = b""
        self._pos = 0
        # a frame spanning receives (of `size` bytes): what came, how much
        self._parts: list[bytes | memoryview] | None = None
        self._got = 0
        self.held = False  # no frames handed over (and no reading) meanwhile
        self._stopped = False  # no more frames: end of stream, a refused frame, a stop
        self._pumping = False
        self._wake_soon = False
        # for the idle watchdog: what is awaited, since when, and the size of a
        # frame under way
        self.phase = SIZE
        self.since = 0.0
        self.size = 0
        self.ended: asyncio.Future[None] | None = None  # done when no more frames come
        self.writing_paused = False

    # ---- the transport's side ----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        # the connection writes straight to the transport (as StreamWriter did)
        self.write = transport.write  # type: ignore[attr-defined]
        self._loop = loop = asyncio.get_running_loop()
        self.since = loop.time()
        self.ended = loop.create_future()
        self._task = loop.create_task(self._accept(self, self))

    def data_received(self, data: bytes) -> None:
        parts = self._parts
        if parts is not None and self._got < self.size:
            # the receives of a frame under way are kept as they came and
            # joined once it is whole: memory follows what arrived, not what
            # a size prefix claims
            take = min(self.size - self._got, len(data))
            parts.append(data if take == len(data) else memoryview(data)[:take])
            self._got += take
            if take == len(data):
                if self._got == self.size:
                    self._pump()
                return
            rest: bytes | memoryview = memoryview(data)[take:]
        else:
            rest = data
        if self._pos >= len(self._pending):
            self._pending, self._pos = rest, 0
        else:
            pending = self._pending
            if not isinstance(pending, bytearray):
                pending = bytearray(memoryview(pending)[self._pos :])
                self._pos = 0
            pending += rest
            self._pending = pending
        self._pump()

    def eof_received(self) -> bool:
        self._end()
        return True  # answers owed may still be written; close() ends it

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self._sink is not None:
            self._sink.writable()

    # ---- the connection's side -----------------------------------------------

    def attach(self, sink: FrameSink) -> None:
        """Frames go to `sink` from now on, those received before it first."""
        self._sink = sink
        self._pump()

    def hold(self) -> None:
        """No more frames until `release()`; the socket is not read meanwhile."""
        if not self.held:
            self.held = True
            self.phase = BLOCKED
            if not self._stopped and self.transport is not None:
                self.transport.pause_reading()

    def release(self) -> None:
        """Frames flow again: those buffered meanwhile in the loop's next turn
        (not inside the caller, which may be a handler), then the socket's."""
        if not self.held:
            return
        self.held = False
        assert self.transport is not None and self._loop is not None
        if self._stopped:
            return
        self.transport.resume_reading()
        if self._pumping:
            return  # the pump running below the caller goes on
        if not self._wake_soon:
            self._wake_soon = True
            self._loop.call_soon(self._woken)

    def feed_eof(self) -> None:
        """No more frames (the broker is stopping); those handed over stand."""
        self._end()

    def fail(self, exc: BaseException) -> None:
        """No more frames: `ended` raises `exc` to the connection's task."""
        self._stopped = True
        if self.ended is not None and not self.ended.done():
            self.ended.set_exception(exc)

    def _end(self) -> None:
        self._stopped = True
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _woken(self) -> None:
        self._wake_soon = False
        self._pump()

    def _pump(self) -> None:
        """Hands over every whole frame received, in order, until held."""
        sink = self._sink
        if sink is None or self._pumping:
            return
        self._pumping = True
        try:
            while not self.held and not self._stopped:
                frame = self._cut()
                if frame is None:
                    break
                sink.frame(frame)
        except Exception as exc:
            self.fail(exc)
        finally:
            self._pumping = False
        if self._stopped or self.held:
            return
        assert self._loop is not None
        if self._parts is None:
            self.phase = SIZE
            self.since = self._loop.time()
        elif self.phase == BLOCKED:  # a frame under way since before the hold
            self.phase = BODY
            self.since = self._loop.time()

    def _cut(self) -> bytes | None:
        """The next whole frame, or None (what came of the next one is kept)."""
        parts = self._parts
        if parts is not None:
            if self._got < self.size:
                return None
            self._parts = None
            return b"".join(parts)  # the one copy of a frame that spanned receives
        pending, pos = self._pending, self._pos
        have = len(pending) - pos
        if have < 4:
            if not have and pos:
                self._pending, self._pos = b"", 0
            return None
        assert self._sink is not None
        size = self._sink.frame_size(bytes(pending[pos : pos + 4]))
        end = pos + 4 + size
        if end <= len(pending):
            self._pos = end
            return bytes(pending[pos + 4 : end])
        # the rest comes in later receives
        self._parts = [memoryview(pending)[pos + 4 :]] if have > 4 else []
        self._got = have - 4
        self._pending, self._pos = b"", 0
        # Kafka's idle bound resets on any byte; here a request must arrive
        # whole within connections.max.idle.ms of its size
        assert self._loop is not None
        self.phase, self.since, self.size = BODY, self._loop.time(), size
        return None

    # ---- the writer's side ---------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:  # replaced once connected
        raise ConnectionResetError("not connected")

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        assert self.transport is not None
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        self._stopped = True
        if self.transport is not None:
            self.transport.close()
