"""A TLS listener's connections (TlsStream), over real sockets, on asyncio's
loop and on uvloop: requests that arrive as many small TLS records (as
librdkafka writes them) are read whole and intact, a client's close_notify
ends the stream without stalling the broker, a reader that stops reading
stops the socket being read, and a failed handshake is reported."""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvloop

from muster.server.listen import start_listener, tls_handshake
from muster.server.tls_stream import TlsStream

T = TypeVar("T")
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def run_on(loop: str, main: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        return runner.run(main)


def server_context(certs: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs / "broker.pem")
    return ctx


def client(certs: Path, port: int) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def recv_exactly(tls: ssl.SSLSocket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = tls.recv(n - len(data))
        assert chunk, "closed"
        data += chunk
    return data


async def serve_frames(
    certs: Path, run_client: Callable[[int], None], limit: int = 1 << 20
) -> tuple[list[bytes], BaseException | None]:
    """A TLS listener whose connections read size-prefixed frames until the
    stream ends; runs `run_client(port)` in a thread; returns the frames read
    and how the (last) stream ended."""
    frames: list[bytes] = []
    ended: list[BaseException | None] = [None]

    async def accept(reader: TlsStream, writer: TlsStream) -> None:
        assert await tls_handshake(writer, "SSL", "test")
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = bytes(await reader.readexactly(size))
                frames.append(frame)
                writer.write(struct.pack(">i", len(frame)))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            ended[0] = exc
        finally:
            writer.close()

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = await start_listener(accept, sock, server_context(certs))
    try:
        await asyncio.wait_for(asyncio.to_thread(run_client, sock.getsockname()[1]), 60)
        await asyncio.sleep(0.2)  # the last frames' reads
    finally:
        server.close()
    return frames, ended[0]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_request_in_many_small_tls_records_is_read_whole(certs: Path, loop: str) -> None:
    rng = random.Random(7)
    sent = [rng.randbytes(n) for n in (1_000_000, 37, 70_000, 4, 0, 300_000)]

    def run(port: int) -> None:
        with client(certs, port) as tls:
            for frame in sent:
                data = struct.pack(">i", len(frame)) + frame
                pos = 0
                while pos < len(data):  # one TLS record per write, 1 B to 16 KiB
                    step = rng.choice((1, 3, 60, 700, 1100, 16384))
                    tls.sendall(data[pos : pos + step])
                    pos += step
            for frame in sent:  # every frame was acknowledged with its size
                assert struct.unpack(">i", recv_exactly(tls, 4)) == (len(frame),)

    frames, _ended = run_on(loop, serve_frames(certs, run))
    assert frames == sent


@pytest.mark.timeout(60)  # a close_notify once made the loop spin
@pytest.mark.parametrize("loop", LOOPS)
def test_close_notify_ends_the_stream_and_the_listener_serves_on(certs: Path, loop: str) -> None:
    def run(port: int) -> None:
        for _ in range(2):
            with client(certs, port) as tls:
                tls.sendall(struct.pack(">i", 5) + b"hello" + struct.pack(">i", 9) + b"half")
                assert recv_exactly(tls, 4) == struct.pack(">i", 5)
                raw = tls.unwrap()  # close_notify in the middle of a frame
                raw.close()

    frames, ended = run_on(loop, serve_frames(certs, run))
    assert frames == [b"hello", b"hello"]  # the second connection was served too
    assert isinstance(ended, asyncio.IncompleteReadError)
    assert ended.partial == b"half"


@pytest.mark.parametrize("loop", LOOPS)
def test_a_reader_that_stops_reading_stops_the_socket_being_read(certs: Path, loop: str) -> None:
    async def main() -> tuple[bool, bool, int]:
        got: asyncio.Queue[tuple[bool, bool, int]] = asyncio.Queue()

        async def accept(reader: TlsStream, writer: TlsStream) -> None:
            assert await tls_handshake(writer, "SSL", "test")
            await reader.readexactly(1)
            await asyncio.sleep(1.0)  # not reading while 8 MiB arrive
            assert writer.transport is not None
            paused = not writer.transport.is_reading()
            size = len(await reader.readexactly(8 << 20))  # catching up
            await got.put((paused, writer.transport.is_reading(), size))
            writer.close()

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        server = await start_listener(accept, sock, server_context(certs))
        done = threading.Event()

        def run() -> None:
            with client(certs, sock.getsockname()[1]) as tls:
                tls.sendall(b"x" + bytes(8 << 20))
                done.wait(30)

        sender = asyncio.create_task(asyncio.to_thread(run))
        try:
            return await asyncio.wait_for(got.get(), 30)
        finally:
            done.set()
            await sender
            server.close()

    paused, reading_after, size = run_on(loop, main())
    assert paused  # 8 MiB were not buffered for a reader that was busy
    assert reading_after
    assert size == 8 << 20


def test_a_plaintext_client_fails_the_handshake_with_a_reason(
    certs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def run(port: int) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
            raw.sendall(struct.pack(">i", 20) + bytes(20))  # a Kafka request, no TLS
            assert raw.recv(100) is not None  # an alert, then the close

    async def main() -> None:
        async def accept(reader: TlsStream, writer: TlsStream) -> None:
            assert not await tls_handshake(writer, "SSL", "127.0.0.1:1")

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        server = await start_listener(accept, sock, server_context(certs))
        await asyncio.wait_for(asyncio.to_thread(run, sock.getsockname()[1]), 30)
        server.close()

    with caplog.at_level("WARNING", logger="muster.broker"):
        asyncio.run(main())
    [line] = [r.getMessage() for r in caplog.records]
    assert "TLS handshake failed" in line
    assert "security.protocol=PLAINTEXT or SASL_PLAINTEXT" in line
