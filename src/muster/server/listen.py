"""Accepting connections: the stream protocol every listener serves, and the
TLS handshake a TLS listener runs on each connection before its first frame.

A TLS listener accepts plain TCP and upgrades each connection itself
(`StreamWriter.start_tls`) rather than handing `ssl=` to `start_server`:
asyncio reports a failed server-side handshake only in debug mode, so a
plaintext client on a TLS port would be closed without a word. Here the
failure is one log line that says what was seen.

TLS connections read through a buffered protocol: asyncio's TLS layer then
decrypts every record into one reused buffer (`SSLObject.read(n, buffer)`)
instead of allocating a 256 KiB bytes object per record and joining them.
librdkafka writes a produce request as one TLS record per buffer segment, so
a 1 KiB-message batch arrives as thousands of records of 20 B to 16 KiB. This
took about 0.03 s off the ~0.16 s of broker CPU that TLS adds per 100k x 1 KiB
produced (bench/README.md, security.py).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable

log = logging.getLogger("muster.broker")

Accept = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

_READ_CHUNK = 256 * 1024  # as asyncio's own TLS read size

# The first bytes a TLS client sends: a handshake record (0x16) of TLS 1.x (0x03).
_TLS_RECORD_START = (0x16, 0x03)


class _BufferedStreamProtocol(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """A StreamReaderProtocol that receives into one reused buffer; the stream
    reader copies each chunk into its own buffer, as it does with `data_received`."""

    def __init__(self, reader: asyncio.StreamReader, accept: Accept) -> None:
        super().__init__(reader, accept)
        self._chunk = memoryview(bytearray(_READ_CHUNK))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._chunk

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._chunk[:nbytes])


async def start_listener(
    accept: Accept, sock: socket.socket, limit: int, tls: bool
) -> asyncio.base_events.Server:
    """Serve `sock`: each connection's reader and writer go to `accept` (which,
    on a TLS listener, calls `tls_handshake` first)."""
    if not tls:
        return await asyncio.start_server(accept, sock=sock, limit=limit)
    loop = asyncio.get_running_loop()

    def factory() -> _BufferedStreamProtocol:
        return _BufferedStreamProtocol(asyncio.StreamReader(limit=limit, loop=loop), accept)

    return await loop.create_server(factory, sock=sock)


async def tls_handshake(
    writer: asyncio.StreamWriter, context: ssl.SSLContext, listener: str, peer: str
) -> bool:
    """Upgrades an accepted connection to TLS; False (logged, closed) if the
    handshake fails."""
    try:
        await writer.start_tls(context)
        return True
    except ConnectionResetError as exc:
        # closed before a handshake finished: a port probe, or a client giving up
        log.debug(
            "connection from %s on TLS listener %s closed during the handshake: %r",
            peer,
            listener,
            exc,
        )
        writer.transport.abort()
        return False
    except (ssl.SSLError, OSError, TimeoutError) as exc:
        log.warning(
            "closing connection from %s on TLS listener %s: TLS handshake failed (%s)%s",
            peer,
            listener,
            _reason(exc),
            "; the client sent no TLS handshake, is it configured for "
            "security.protocol=PLAINTEXT or SASL_PLAINTEXT?"
            if _not_tls(exc)
            else "",
        )
        writer.transport.abort()
        return False


def looks_like_tls(prefix: bytes) -> bool:
    """True when the 4 bytes read as a Kafka frame size are a TLS handshake
    record's start: a TLS client on a plaintext listener."""
    return len(prefix) >= 2 and (prefix[0], prefix[1]) == _TLS_RECORD_START


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return exc.reason
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def _not_tls(exc: BaseException) -> bool:
    # OpenSSL's verdicts on a first record that is not a TLS handshake
    # (a Kafka request's size and header): a plaintext client.
    return isinstance(exc, ssl.SSLError) and exc.reason in {
        "WRONG_VERSION_NUMBER",
        "UNSUPPORTED_PROTOCOL",
        "HTTP_REQUEST",
        "UNEXPECTED_RECORD",
        "PACKET_LENGTH_TOO_LONG",
        "RECORD_LAYER_FAILURE",
    }
