"""One client connection: frames in, handlers run, answers out in request order."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from collections.abc import Coroutine
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from muster.protocol.codec import (
    DecodeError,
    decode_request,
    encode_response,
    encode_response_view,
)
from muster.protocol.fetch_response import Chunks
from muster.protocol.header import (
    API_VERSIONS_KEY,
    is_flexible,
    parse_request_header,
    peek_prefix,
    response_header,
)
from muster.security.session import ListenerSecurity, Rejected, Session
from muster.server.api_table import ApiEntry
from muster.server.clock import now_ms
from muster.server.handlers.api_versions import supported_versions
from muster.server.listen import looks_like_tls
from muster.server.plain_stream import BLOCKED, BODY, SIZE, PlainStream
from muster.server.state import BrokerState, RequestContext
from muster.server.tls_stream import TlsStream

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">i")
_PREFIX_V0 = struct.Struct(">ii")  # size, correlation id
_PREFIX_V1 = struct.Struct(">iib")  # and no tagged fields
MAX_PIPELINED = 128
_JOIN_LIMIT = 64 * 1024
# a request frame this large is decoded off the loop, but Produce: its records
# stay bytes, so a megabyte of them decodes in microseconds
_OFFLOAD_BYTES = 128 * 1024
_PRODUCE = b"\x00\x00"  # its api key, as a frame starts
# frames up to this size are remembered, one per API, for a byte-identical
# repeat (a heartbeat is ~80 bytes, a fetch at the log end ~120): a
# connection keeps a few hundred bytes per API it uses
_REPEAT_BYTES = 512


class _Admitted(NamedTuple):
    entry: ApiEntry
    api_key: int
    version: int
    correlation_id: int
    flexible: bool


class ProtocolViolation(Exception):
    """The peer sent something we answer by closing the connection."""


class _Answer:
    """One request's place in the answer order; body is set once it is known."""

    __slots__ = ("api_key", "body", "correlation_id", "done", "flexible", "version")

    def __init__(self, correlation_id: int, api_key: int, version: int, flexible: bool) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.flexible = flexible
        # None when done: no answer (acks=0)
        self.body: bytes | bytearray | memoryview | Chunks | None = None
        self.done = False


class Connection:
    def __init__(
        self,
        state: BrokerState,
        table: dict[int, ApiEntry],
        reader: PlainStream | TlsStream,
        writer: PlainStream | TlsStream,
        session: Session | None = None,
    ) -> None:
        self.state = state
        # Authentication: which requests may be served, and as whom.
        self.session = session or Session(ListenerSecurity("PLAINTEXT", "PLAINTEXT"))
        self.table = table
        self.reader = reader
        self.writer = writer
        # A plaintext connection pushes each whole frame to `frame` as it is
        # received (plain_stream.py); a TLS one is read by `_read_requests`.
        self._push = reader if isinstance(reader, PlainStream) else None
        self._decoding: asyncio.Task[None] | None = None  # a big frame, in a thread
        self._limit = int(state.config["socket.request.max.bytes"])
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.host = peer[0] if isinstance(peer, tuple) else "unknown"
        # Answers leave in request order; whichever task completes the oldest
        # outstanding answer writes it (and any finished ones behind it), so an
        # answer goes out from the task that computed it, with no sender task
        # to wake in between.
        self._order: deque[_Answer] = deque()
        self._room = asyncio.Event()
        self._broken = False
        self._inflight: list[asyncio.Task[Any]] = []
        self._barrier: asyncio.Task[Any] | None = None
        self._drain_s = 0.0  # > 0 once the broker is stopping (see drain)
        # The idle bound without a timer per read: the reader (the read loop,
        # or the PlainStream) notes when its current wait began (`since`, loop
        # time) and what it waits for (`phase`), and one watchdog per
        # connection, armed for the earliest possible deadline, re-arms itself
        # for the real one when it fires.
        self.since = 0.0
        self.phase = SIZE
        self.size = 0
        self._expired: str | None = None  # why the watchdog closed the connection
        self._watchdog: asyncio.TimerHandle | None = None
        self._idle_s = 0.0
        # api key -> (the last small frame but its correlation id, its client
        # id, its decoded request)
        self._repeat: dict[int, tuple[bytes, str | None, Any]] = {}

    async def serve(self) -> None:
        try:
            if self._push is not None:
                await self._take_requests(self._push)
            else:
                await self._read_requests()
        except ProtocolViolation as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._expired is None or task is None or task.cancelling() > 1:
                raise  # the broker is stopping
            task.uncancel()  # the watchdog's own cancel: the bound was passed
            log.warning("closing connection from %s: %s", self.peer, self._expired)
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            if self._push is not None:
                self._push.feed_eof()
                if self._decoding is not None:
                    self._decoding.cancel()
            if self._drain_s > 0 and self._inflight:
                # A graceful stop: requests already read are answered (a write
                # appended and being fsynced, a commit), within the bound.
                await asyncio.wait(self._inflight, timeout=self._drain_s)
            # The peer is gone, broke the protocol, or the broker is stopping:
            # nobody will read answers still being computed (a parked JoinGroup
            # or a long-polling Fetch), so they are cancelled, not awaited.
            for task in self._inflight:
                task.cancel()
            await asyncio.gather(*self._inflight, return_exceptions=True)
            share = self.state.services.share
            if share is not None:  # the share sessions it opened end with it (Kafka)
                share.connection_closed(self.session)
            self.writer.close()

    def drain(self, seconds: float) -> None:
        """The broker is stopping: read no more requests, answer those read
        (for at most `seconds`), then close, as Kafka's clean shutdown does."""
        self._drain_s = seconds
        self.reader.feed_eof()

    async def _read_requests(self) -> None:
        """The TLS connection's read loop (a plaintext one pushes, see frame)."""
        task = asyncio.current_task()
        assert task is not None
        loop = self._arm_watchdog(task)
        reader = self.reader
        while True:
            size = self.frame_size(bytes(await reader.readexactly(4)))
            self.since = loop.time()
            self.phase = BODY
            self.size = size
            frame = await reader.readexactly(size)
            if size >= _OFFLOAD_BYTES and frame[:2] != _PRODUCE:
                await self._dispatch_large(frame)
            else:
                self._dispatch(frame)
            # Backpressure: no new request while too many answers are owed or
            # the socket's send buffer is full.
            if len(self._order) >= MAX_PIPELINED or self.writer.transport.get_write_buffer_size():
                self.phase = BLOCKED
                while len(self._order) >= MAX_PIPELINED:
                    self._room.clear()
                    await self._room.wait()
                await self.writer.drain()
            self.since = loop.time()
            self.phase = SIZE

    async def _take_requests(self, stream: PlainStream) -> None:
        """A plaintext connection: the stream hands each whole frame to
        `frame`, in the callback that received it; this task only waits for
        the end (the peer's, a refused frame, the watchdog's or a stop)."""
        self._arm_watchdog(None)
        stream.attach(self)
        assert stream.ended is not None
        await stream.ended
        if self._expired is not None:
            raise ProtocolViolation(self._expired)

    def _arm_watchdog(self, task: asyncio.Task[Any] | None) -> asyncio.AbstractEventLoop:
        self._idle_s = int(self.state.config["connections.max.idle.ms"]) / 1000
        loop = asyncio.get_running_loop()
        self.since = loop.time()
        self._watchdog = loop.call_at(self.since + self._idle_s, self._watch, task)
        return loop

    def frame_size(self, prefix: bytes) -> int:
        """The size a frame's 4-byte prefix gives, or ProtocolViolation."""
        (size,) = _LENGTH.unpack(prefix)
        # until authenticated, Kafka's smaller sasl.server.max.receive.size
        cap = self.session.frame_limit(self._limit)
        if size < (0 if self.session.raw_tokens else 8) or size > cap:
            if looks_like_tls(prefix):
                raise ProtocolViolation(
                    f"a TLS handshake on {self.session.listener.protocol} listener "
                    f"{self.session.listener.name}; is the client configured for "
                    "security.protocol=SSL or SASL_SSL?"
                )
            raise ProtocolViolation(f"frame of {size} bytes (limit {cap})")
        return size

    def frame(self, frame: bytes | memoryview) -> None:
        """One whole frame from the PlainStream, handled here and now."""
        stream = self._push
        assert stream is not None
        if len(frame) >= _OFFLOAD_BYTES and frame[:2] != _PRODUCE:
            admitted = self._admit(frame)
            if admitted is not None:
                # later frames wait (in arrival order) until it is launched
                stream.hold()
                self._decoding = asyncio.ensure_future(self._decode_large(admitted, frame))
                return
        else:
            self._dispatch(frame)
        # Backpressure: no new request while too many answers are owed or
        # the socket's send buffer is full.
        if len(self._order) >= MAX_PIPELINED or stream.writing_paused:
            stream.hold()

    def writable(self) -> None:
        self._release()

    def _release(self) -> None:
        """Lets the PlainStream hand over frames again if nothing holds it."""
        stream = self._push
        if (
            stream is not None
            and self._decoding is None
            and len(self._order) < MAX_PIPELINED
            and not stream.writing_paused
        ):
            stream.release()

    async def _decode_large(self, admitted: _Admitted, frame: bytes | memoryview) -> None:
        stream = self._push
        assert stream is not None
        try:
            header, request = await asyncio.to_thread(_decode, admitted, frame)
            self._launch(admitted, header.client_id, request)
        except Exception as exc:
            stream.fail(exc)
            return
        finally:
            self._decoding = None
        self._release()

    def _watch(self, task: asyncio.Task[Any] | None) -> None:
        """The watchdog: closes a connection idle (or mid-request) too long."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        reading = self if self._push is None else self._push
        deadline = reading.since + self._idle_s
        if now < deadline:
            self._watchdog = loop.call_at(deadline, self._watch, task)
            return
        if reading.phase == BLOCKED or (
            reading.phase == SIZE and any(not t.done() for t in self._inflight)
        ):
            # answers are still owed (a long poll, a join) or not yet taken
            # by the client: not idle
            reading.since = now
            self._watchdog = loop.call_at(now + self._idle_s, self._watch, task)
            return
        self._watchdog = None
        if reading.phase == SIZE:
            self._expired = f"idle for {self._idle_s:.0f}s"
        else:
            self._expired = (
                f"request of {reading.size} bytes not received within {self._idle_s:.0f}s"
            )
        if task is not None:
            task.cancel()
        elif self._push is not None:
            self._push.feed_eof()

    def _dispatch(self, frame: bytes | memoryview) -> None:
        admitted = self._admit(frame)
        if admitted is None:
            return
        if len(frame) > _REPEAT_BYTES or admitted.api_key == 0:  # a Produce never repeats
            header, request = _decode(admitted, frame)
            self._launch(admitted, header.client_id, request)
            return
        # A client repeats requests byte for byte but for the correlation id
        # (a heartbeat, a metadata refresh, a fetch at the log end, an
        # OffsetFetch): the last small frame of each API and what it decoded
        # to (frozen entities) are kept, so a repeat skips the header parse,
        # the bounds walk and kio's decode, a fifth of a small request's CPU.
        key = frame[:4] + frame[8:] if type(frame) is bytes else bytes(frame[:4]) + bytes(frame[8:])
        last = self._repeat.get(admitted.api_key)
        if last is not None and last[0] == key:
            self._launch(admitted, last[1], last[2])
            return
        header, request = _decode(admitted, frame)
        self._repeat[admitted.api_key] = (key, header.client_id, request)
        self._launch(admitted, header.client_id, request)

    async def _dispatch_large(self, frame: bytes | memoryview) -> None:
        """A frame of 100,000 partitions takes a tenth of a second of CPU to
        decode (more on a loaded machine): in a worker thread, while the loop
        serves the other connections; this one reads on once it is done, so
        its requests still start in arrival order."""
        admitted = self._admit(frame)
        if admitted is not None:
            header, request = await asyncio.to_thread(_decode, admitted, frame)
            self._launch(admitted, header.client_id, request)

    def _admit(self, frame: bytes | memoryview) -> _Admitted | None:
        """The checks before decoding; None when the frame needs no more."""
        session = self.session
        if session.raw_tokens:
            self._raw_token(frame)
            return None
        if session.close_after_answer:
            return None  # authentication failed: nothing more is served
        try:
            api_key, version, correlation_id = peek_prefix(frame)
        except DecodeError as exc:
            raise ProtocolViolation(str(exc)) from exc
        try:
            session.admit(api_key, now_ms())
        except Rejected as exc:
            raise ProtocolViolation(f"{exc} (listener {session.listener.name})") from exc
        entry = self.table.get(api_key)
        if entry is None:
            raise ProtocolViolation(f"unsupported api key {api_key}")
        if not entry.min_version <= version <= entry.max_version:
            if api_key == API_VERSIONS_KEY:
                # KIP-511: answer an unknown ApiVersions version with a v0 body
                # listing ApiVersions' own range only, as Kafka does.
                own = [k for k in supported_versions(self.table) if k["api_key"] == api_key]
                body = encode_response(
                    API_VERSIONS_KEY,
                    0,
                    {"error_code": ErrorCode.unsupported_version, "api_keys": own},
                )
                answer = _Answer(correlation_id, api_key, 0, False)
                answer.body = body
                answer.done = True
                self._order.append(answer)
                self._send_ready()
                return None
            raise ProtocolViolation(f"unsupported version {version} of api {entry.name}")
        return _Admitted(entry, api_key, version, correlation_id, is_flexible(api_key, version))

    def _launch(self, admitted: _Admitted, client_id: str | None, request: Any) -> None:
        session = self.session
        entry, api_key, version, correlation_id, flexible = admitted
        ctx = RequestContext(
            api_key,
            version,
            correlation_id,
            client_id,
            self.host,
            self.state,
            session.listener.name,
            session.principal,
            session,
        )
        # What this request waits for is fixed now, in arrival order.
        if self._inflight:
            self._inflight = [t for t in self._inflight if not t.done()]
        if entry.serial:
            before = list(self._inflight)
        elif self._barrier is not None and not self._barrier.done():
            before = [self._barrier]
        else:
            before = []
        answer = _Answer(correlation_id, api_key, version, flexible)
        self._order.append(answer)
        run = self._run(entry, ctx, request, before, answer)
        if before:
            task = asyncio.create_task(run)
        else:
            started = _start(run)
            if started is None:  # answered without waiting for anything
                if entry.serial:
                    self._barrier = None
                return
            task = started
        self._inflight.append(task)
        if entry.serial:
            self._barrier = task

    async def _run(
        self,
        entry: ApiEntry,
        ctx: RequestContext,
        request: Any,
        before: list[asyncio.Task[Any]],
        answer: _Answer,
    ) -> None:
        if before:
            await asyncio.wait(before)
        try:
            payload = await entry.handler(ctx, request)
            if payload is None:  # acks=0 produce, Kafka sends nothing back
                pass
            elif ctx.large_answer:
                # a 100,000-entry answer takes the loop thread for a second to
                # encode; in a worker thread the loop still gets the GIL every
                # switch interval and serves the other connections meanwhile
                answer.body = await asyncio.to_thread(
                    encode_response_view, answer.api_key, answer.version, payload
                )
            else:
                answer.body = encode_response_view(answer.api_key, answer.version, payload)
            if payload is not None and log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "%s api=%d v%d corr=%d -> %.600s",
                    self.peer,
                    answer.api_key,
                    answer.version,
                    answer.correlation_id,
                    _summary(payload),
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("handler failed; closing connection from %s", self.peer)
            self._broken = True
            self.writer.close()
            return
        answer.done = True
        self._send_ready()
        if self.session.close_after_answer:
            # Kafka answers a failed authentication, then closes (the answer
            # is flushed first: close() sends what is buffered).
            log.info("closing connection from %s: %s", self.peer, self.session.close_after_answer)
            self.writer.close()

    def _raw_token(self, frame: bytes | memoryview) -> None:
        """After a v0 SaslHandshake: a bare SASL token in, a bare token out."""
        error, _message, reply, _lifetime = self.session.authenticate(bytes(frame), now_ms())
        if error:
            raise ProtocolViolation(f"authentication failed: {self.session.close_after_answer}")
        self.writer.write(_LENGTH.pack(len(reply)) + reply)

    def _send_ready(self) -> None:
        """Writes every finished answer at the head of the order."""
        order = self._order
        while order and order[0].done and not self._broken:
            answer = order.popleft()
            body = answer.body
            if body is None:
                continue
            if isinstance(body, Chunks):
                # a Fetch answer in pieces: its record sets go out uncopied
                header = response_header(answer.correlation_id, answer.api_key, answer.flexible)
                self.writer.write(_LENGTH.pack(len(header) + body.nbytes) + header)
                for chunk in body:
                    self.writer.write(chunk)
                continue
            # size and response header in one pack (header v1 ends in an
            # empty tagged-field section; ApiVersions always answers in v0)
            if answer.flexible and answer.api_key != API_VERSIONS_KEY:
                prefix = _PREFIX_V1.pack(len(body) + 5, answer.correlation_id, 0)
            else:
                prefix = _PREFIX_V0.pack(len(body) + 4, answer.correlation_id)
            if len(body) > _JOIN_LIMIT:
                # a megabyte Fetch body goes to the socket without a join copy
                self.writer.write(prefix)
                self.writer.write(body)
            else:
                # one send per answer: each send on loopback wakes the client
                self.writer.write(prefix + body)
        if len(order) < MAX_PIPELINED:
            if self._push is None:
                self._room.set()
            elif self._push.held:
                self._release()


def _start(run: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Runs a request up to its first wait, here, and only then makes it a task.

    Most small requests (a heartbeat, metadata, a commit with
    muster.fsync=never, a fetch with nothing to wait for) never wait: they are
    answered in the reader's own turn of the loop, with no task to create
    and no extra loop iteration before the handler runs. None: done.
    """
    try:
        waiting = run.send(None)
    except StopIteration:
        return None
    return asyncio.create_task(_finish(run, waiting))


async def _finish(run: Coroutine[Any, Any, None], waiting: Any) -> None:
    """Drives `run`, suspended on `waiting`, as a task would: a result is sent
    in, an exception (the future's, or this task's cancellation) thrown in."""
    while True:
        try:
            if waiting is None:  # a bare yield: one turn of the loop
                await asyncio.sleep(0)
            else:
                # what a task does with a future its coroutine yields: takes
                # the "awaited by a task" mark off, and awaits it itself
                waiting._asyncio_future_blocking = False
                await waiting
        except BaseException as exc:
            try:
                waiting = run.throw(exc)
            except StopIteration:
                return
            continue
        try:
            waiting = run.send(None)
        except StopIteration:
            return


def _decode(admitted: _Admitted, frame: bytes | memoryview) -> tuple[Any, Any]:
    """(header, request); pure, so it may run in a worker thread."""
    entry, api_key, version, _correlation_id, flexible = admitted
    try:
        header = parse_request_header(frame, flexible)
        return header, decode_request(api_key, version, frame, header.body_offset)
    except DecodeError as exc:
        raise ProtocolViolation(f"undecodable {entry.name} v{version}: {exc}") from exc


def _summary(payload: Any) -> str:
    """A request's answer for the debug log, without record bytes."""
    if isinstance(payload, dict):
        return "{" + ", ".join(f"{k}: {_summary(v)}" for k, v in payload.items()) + "}"
    if isinstance(payload, list | tuple):
        return "[" + ", ".join(_summary(v) for v in payload) + "]"
    if isinstance(payload, bytes | bytearray):
        return f"<{len(payload)} bytes>"
    return repr(payload)
