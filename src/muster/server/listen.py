"""Accepting connections: the protocol every listener serves (plain_stream.py
or tls_stream.py), and the TLS handshake a TLS listener runs on each
connection before its first frame.

A TLS listener runs each connection's handshake itself rather than handing
`ssl=` to `start_server`: asyncio reports a failed server-side handshake only
in debug mode, so a plaintext client on a TLS port would be closed without a
word. Here the failure is one log line that says what was seen.

A TLS connection is a `TlsStream` (tls_stream.py): muster's own buffered
protocol over the TCP transport, which decrypts each request straight into
its frame (0.02-0.06 s less broker CPU per 100k x 1 KiB produced than
asyncio's TLS transport; bench/README.md, security.py). It is TLS from the
first byte, so a ClientHello that arrives before the handshake starts is
not lost (on uvloop, `start_tls` lost it and every TLS client timed out).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from muster.server.plain_stream import PlainStream, prime_allocator
from muster.server.tls_stream import TlsStream

log = logging.getLogger("muster.broker")

Accept = Callable[[Any, Any], Awaitable[None]]

# Ciphertext a TLS connection holds undecrypted before it stops reading the
# socket. Small on purpose: OpenSSL's memory BIO moves its unread bytes to the
# front on every write, so a megabyte backlog costs a megabyte memmove per
# receive; the kernel's socket buffer holds a backlog for free.
TLS_BACKLOG = 256 * 1024

# asyncio's default ssl_handshake_timeout
HANDSHAKE_TIMEOUT_S = 60.0

# The first bytes a TLS client sends: a handshake record (0x16) of TLS 1.x (0x03).
_TLS_RECORD_START = (0x16, 0x03)


async def start_listener(
    accept: Accept, sock: socket.socket, tls: ssl.SSLContext | None
) -> asyncio.base_events.Server:
    """Serve `sock`: each connection goes to `accept` as its reader and writer
    in one: a PlainStream (which pushes whole frames to the connection), or
    on a TLS listener a TlsStream (read by the connection; `accept` calls
    `tls_handshake` first)."""
    loop = asyncio.get_running_loop()
    if tls is None:
        prime_allocator()
        return await loop.create_server(lambda: PlainStream(accept), sock=sock)
    return await loop.create_server(lambda: TlsStream(tls, accept, TLS_BACKLOG), sock=sock)


async def tls_handshake(writer: TlsStream, listener: str, peer: str) -> bool:
    """Runs the TLS handshake of an accepted connection; False (logged,
    closed) if it fails."""
    try:
        await writer.handshake(HANDSHAKE_TIMEOUT_S)
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
