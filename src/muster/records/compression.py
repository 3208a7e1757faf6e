"""Record-batch compression codecs (attributes bits 0-2) via cramjam.

Only the compaction cleaner, ListOffsets-by-timestamp and tests decompress:
the produce/fetch path stores and serves batches as the producer sent them.

Snappy: Kafka's Java client writes xerial-framed snappy (a 16-byte header then
[int32 length][raw snappy block]...); librdkafka writes raw snappy and reads
both. We decode raw, xerial and the official snappy framing format, and encode
xerial (readable by Java, librdkafka, sarama, kafka-python and aiokafka).
LZ4 uses the frame format with independent blocks, as Kafka requires (KIP-57).
"""

from __future__ import annotations

import struct

import cramjam

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
BY_NAME = {name: codec for codec, name in CODEC_NAMES.items()}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_SNAPPY_FRAMED = b"\xff\x06\x00\x00sNaPpY"


class CompressionError(ValueError):
    """Unknown codec or bytes that do not decompress."""


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.compress(data))
        if codec == SNAPPY:
            return _xerial_compress(data)
        if codec == LZ4:
            return _lz4_compress(data)
        if codec == ZSTD:
            return bytes(cramjam.zstd.compress(data, level=3))
    except cramjam.CompressionError as exc:  # pragma: no cover - defensive
        raise CompressionError(str(exc)) from exc
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _snappy_decompress(bytes(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, struct.error, ValueError) as exc:
        raise CompressionError(f"{CODEC_NAMES.get(codec, codec)}: {exc}") from exc
    raise CompressionError(f"unknown compression codec {codec}")


def _lz4_compress(data: bytes | bytearray | memoryview) -> bytes:
    # Kafka's Java reader (Lz4BlockInputStream) decompresses each block on its
    # own: blocks must be independent (KIP-57); level 9 is Kafka's default.
    compressor = cramjam.lz4.Compressor(level=9, content_checksum=False, block_linked=False)
    compressor.compress(data if isinstance(data, bytes) else bytes(data))
    return bytes(compressor.finish())


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, max(len(view), 1), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out.append(struct.pack(">i", len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes) -> bytes:
    if data.startswith(XERIAL_MAGIC):
        pos, out = 16, []
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if length < 0 or pos + length > len(data):
                raise CompressionError("truncated xerial snappy block")
            out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + length])))
            pos += length
        return b"".join(out)
    if data.startswith(_SNAPPY_FRAMED):
        return bytes(cramjam.snappy.decompress(data))
    return bytes(cramjam.snappy.decompress_raw(data))
