"""One TLS connection, server side: a buffered protocol over the TCP transport
that is also the connection's reader and writer (the parts of asyncio's
StreamReader and StreamWriter that `Connection` and the broker use).

Why not asyncio's TLS transport (`start_tls`, or `ssl=` on the server):
librdkafka writes a produce request as one TLS record per buffer segment, so
100k x 1 KiB arrive as ~45,000 records, most under 2 KiB. asyncio's TLS layer
pays Python work per record (a memoryview slice, the `SSLObject.read` wrapper,
its state machine) and then hands the plaintext through a stream buffer that
copies it twice more before a request is whole. Here the ciphertext goes into
a memory BIO as it is received, and a request is decrypted only once it is
asked for, straight into the buffer that becomes the frame: one C call per
record and nothing else. A frame is handed over when it is complete, so a
1 MB request wakes its reader once, not once per receive.

Ciphertext nobody asks for yet (a handler is running, or the connection is
blocked on answers owed) stays in the BIO; past `limit` bytes the transport
stops reading until the reader catches up (listen.py's TLS_BACKLOG says why
that limit is small).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

_READ_CHUNK = 256 * 1024  # as asyncio's own TLS read size

Accept = Callable[[Any, Any], Awaitable[None]]


class TlsStream(asyncio.BufferedProtocol):
    """The server side of one TLS connection; `accept(self, self)` runs as a
    task once TCP is connected, and must `await handshake()` first."""

    def __init__(self, context: ssl.SSLContext, accept: Accept, limit: int) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._accept = accept
        self._limit = limit
        self._cipher = memoryview(bytearray(_READ_CHUNK))
        self.transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._handshake: asyncio.Future[None] | None = None
        self._handshaken = False
        # the frame being read: its buffer, how much of it is decrypted, and
        # the reader waiting for the rest
        self._frame: memoryview | None = None
        self._got = 0
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False  # no more requests: TCP or TLS end, or feed_eof
        self._lost: BaseException | None = None  # the connection is gone
        self._failed: ssl.SSLError | None = None  # a bad record: the stream is unusable
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._closing = False

    # ---- the transport's side ----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._accept(self, self))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._cipher

    def buffer_updated(self, nbytes: int) -> None:
        self._incoming.write(self._cipher[:nbytes])
        if not self._handshaken:
            if self._handshake is not None:
                self._step_handshake()
        elif self._frame is not None:
            self._fill()
        if not self._reading_paused and self._incoming.pending > self._limit:
            self._reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._handshake_ended()
        self._wake()
        return True  # answers owed may still be written; close() ends it

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or ConnectionResetError("connection lost")
        self._eof = True
        self._handshake_ended()
        self._wake()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionResetError("connection lost"))
        self._drain_waiters.clear()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # ---- the handshake -------------------------------------------------------

    async def handshake(self, timeout: float) -> None:
        """Completes the TLS handshake; raises what OpenSSL saw (ssl.SSLError),
        ConnectionResetError if the peer left, TimeoutError after `timeout`."""
        assert self._loop is not None
        self._handshake = self._loop.create_future()
        self._step_handshake()
        async with asyncio.timeout(timeout):
            await self._handshake

    def _step_handshake(self) -> None:
        waiter = self._handshake
        assert waiter is not None
        if waiter.done():
            return
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return
        except (ssl.SSLError, OSError) as exc:
            self._flush()  # the alert, so the client learns why
            waiter.set_exception(exc)
            return
        self._handshaken = True
        self._flush()  # the server's last flight and TLS 1.3 session tickets
        waiter.set_result(None)

    def _handshake_ended(self) -> None:
        """The peer left before the handshake finished."""
        waiter = self._handshake
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("closed during the TLS handshake"))

    # ---- the reader's side ---------------------------------------------------

    async def readexactly(self, n: int) -> memoryview:
        """The next `n` bytes of plaintext, read-only (as the codec wants);
        IncompleteReadError if the stream ends first, as StreamReader's."""
        view = memoryview(bytearray(n))
        self._frame = view
        self._got = 0
        if n:
            self._fill()
        try:
            if self._got < n:
                if self._eof or self._failed is not None:
                    raise self._incomplete()
                assert self._loop is not None
                self._waiter = self._loop.create_future()
                await self._waiter
        finally:
            self._frame = None
            self._waiter = None
        return view.toreadonly()

    def feed_eof(self) -> None:
        """No more requests (the broker is stopping): a read waiting fails as
        at the end of the stream; what is already whole is still read."""
        self._eof = True
        self._wake()

    def _fill(self) -> None:
        """Decrypts buffered records into the frame being read, one C call per
        record; wakes the reader once the frame is whole."""
        view = self._frame
        assert view is not None
        got, n = self._got, len(view)
        read = self._ssl.read
        try:
            while got < n:
                k = read(n - got, view[got:])
                if not k:  # the client's close_notify
                    self._eof = True
                    break
                got += k
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            self._eof = True
        except ssl.SSLError as exc:
            self._failed = exc  # a record that does not decrypt
        self._got = got
        if self._outgoing.pending:
            self._flush()  # a TLS 1.3 KeyUpdate answer, or an alert
        if self._reading_paused and self._incoming.pending <= self._limit // 2:
            self._reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        if got == n:
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(None)
        else:
            self._wake()

    def _wake(self) -> None:
        """Fails a waiting read if no more of its frame can come."""
        waiter = self._waiter
        if waiter is not None and not waiter.done() and (self._eof or self._failed):
            waiter.set_exception(self._incomplete())

    def _incomplete(self) -> BaseException:
        if self._failed is not None:
            return ConnectionResetError(f"TLS record error: {self._failed}")
        view = self._frame
        assert view is not None
        return asyncio.IncompleteReadError(bytes(view[: self._got]), len(view))

    # ---- the writer's side ---------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data or self._closing or self._lost is not None:
            return
        view = memoryview(data)
        write = self._ssl.write
        while view:
            view = view[write(view) :]
        self._flush()

    def _flush(self) -> None:
        out = self._outgoing.read()
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(out)

    async def drain(self) -> None:
        if self._lost is not None:
            raise ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        assert self._loop is not None
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._ssl
        if name == "peercert":
            return self._ssl.getpeercert()
        if name == "cipher":
            return self._ssl.cipher()
        assert self.transport is not None
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        """Sends close_notify after what is written, then closes TCP."""
        if self._closing:
            return
        self._closing = True
        if self.transport is None or self.transport.is_closing():
            return
        if self._handshaken and self._lost is None:
            try:
                self._ssl.unwrap()
            except ssl.SSLError:
                pass  # the peer's close_notify is not awaited
            self._flush()
        self.transport.close()
