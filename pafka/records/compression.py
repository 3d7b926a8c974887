"""Compressing and decompressing record payloads as Kafka's Java clients and brokers write them.

Used where the broker must rebuild records (format conversion) and by tools; a v2 batch sent
by a v2 producer is never decompressed. What each codec means on the wire:

* gzip: one gzip member (RFC 1952).
* snappy: the xerial framing Java's ``SnappyOutputStream`` writes (an 8-byte magic, two int32
  versions, then int32-length-prefixed raw snappy blocks); raw snappy is read too, as some
  non-Java clients send it.
* lz4: the LZ4 frame format with independent blocks and no content size (Java refuses linked
  blocks). Magic 0 messages carry Kafka's broken frame-descriptor checksum (KAFKA-3160: the
  hash was taken over the 4 magic bytes too); it is ignored on read and written on write, as
  Kafka does for magic 0 only.
* zstd: magic 2 only (KIP-110); asking for it with an older magic is UNSUPPORTED_COMPRESSION_TYPE.

Errors: bytes that do not decompress are :class:`CorruptMessageError`; a codec this
installation cannot handle is :class:`UnsupportedCompressionTypeError`.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame

from pafka.errors import CorruptMessageError, UnsupportedCompressionTypeError
from pafka.records.batch import Buffer, Codec

# lz4 frame descriptor: magic(4) FLG(1) BD(1) [content size(8)] HC(1).
LZ4_MAGIC = b"\x04\x22\x4d\x18"
LZ4_DESCRIPTOR_OFFSET = 4
LZ4_CONTENT_SIZE_FLAG = 0x08
LZ4_CONTENT_SIZE_BYTES = 8

_PRIME32_1 = 0x9E3779B1
_PRIME32_2 = 0x85EBCA77
_PRIME32_3 = 0xC2B2AE3D
_PRIME32_4 = 0x27D4EB2F
_PRIME32_5 = 0x165667B1
_MASK32 = 0xFFFFFFFF


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes: an lz4 frame descriptor's checksum input.

    The lz4 library checks the descriptor checksum but offers no way to compute one, and the
    input is never longer than 14 bytes, so only the short-input branch of XXH32 is needed.
    """
    if len(data) >= 16:
        raise ValueError("xxh32_short hashes fewer than 16 bytes")
    acc = (_PRIME32_5 + len(data)) & _MASK32
    pos = 0
    while pos + 4 <= len(data):
        (lane,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl32((acc + lane * _PRIME32_3) & _MASK32, 17) * _PRIME32_4) & _MASK32
        pos += 4
    for byte in data[pos:]:
        acc = (_rotl32((acc + byte * _PRIME32_5) & _MASK32, 11) * _PRIME32_1) & _MASK32
    acc ^= acc >> 15
    acc = (acc * _PRIME32_2) & _MASK32
    acc ^= acc >> 13
    acc = (acc * _PRIME32_3) & _MASK32
    acc ^= acc >> 16
    return acc


def _lz4_descriptor_end(frame: bytes) -> int:
    """Position of the HC byte: after FLG, BD and the optional content size."""
    if len(frame) < LZ4_DESCRIPTOR_OFFSET + 3 or frame[:4] != LZ4_MAGIC:
        raise CorruptMessageError("lz4 payload does not start with an lz4 frame header")
    flg = frame[LZ4_DESCRIPTOR_OFFSET]
    end = LZ4_DESCRIPTOR_OFFSET + 2
    if flg & LZ4_CONTENT_SIZE_FLAG:
        end += LZ4_CONTENT_SIZE_BYTES
    if len(frame) <= end:
        raise CorruptMessageError("lz4 frame header is truncated")
    return end


def _with_header_checksum(frame: bytes, *, broken: bool) -> bytes:
    """``frame`` with its descriptor checksum recomputed: correct, or as magic 0 wrote it."""
    end = _lz4_descriptor_end(frame)
    start = 0 if broken else LZ4_DESCRIPTOR_OFFSET
    checksum = (xxh32_short(frame[start:end]) >> 8) & 0xFF
    return frame[:end] + bytes([checksum]) + frame[end + 1 :]


def _lz4_compress(data: bytes, magic: int) -> bytes:
    frame: bytes = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    return _with_header_checksum(frame, broken=True) if magic == 0 else frame


def _lz4_decompress(data: bytes, magic: int) -> bytes:
    if magic == 0:
        data = _with_header_checksum(data, broken=False)
    out: bytes = lz4.frame.decompress(data)
    return out


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version 1, compatible version 1
_XERIAL_BLOCK_BYTES = 32 * 1024
_INT32 = struct.Struct(">i")


def _snappy_compress(data: bytes) -> bytes:
    import snappy

    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for pos in range(0, len(data), _XERIAL_BLOCK_BYTES):
        block = snappy.compress(data[pos : pos + _XERIAL_BLOCK_BYTES])
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: bytes) -> bytes:
    import snappy

    if not data.startswith(_XERIAL_MAGIC):
        out: bytes = snappy.decompress(data)
        return out
    pos, chunks = _XERIAL_HEADER.size, []
    while pos < len(data):
        if pos + _INT32.size > len(data):
            raise CorruptMessageError("truncated xerial snappy block length")
        (size,) = _INT32.unpack_from(data, pos)
        pos += _INT32.size
        if size < 0 or pos + size > len(data):
            raise CorruptMessageError("xerial snappy block runs past the payload")
        chunks.append(snappy.decompress(data[pos : pos + size]))
        pos += size
    return b"".join(chunks)


def _zstd_compress(data: bytes) -> bytes:
    import zstandard

    out: bytes = zstandard.ZstdCompressor().compress(data)
    return out


def _zstd_decompress(data: bytes) -> bytes:
    from kafka import codec

    out: bytes = codec.zstd_decode(data)
    return out


def _check_codec(codec: Codec, magic: int) -> None:
    if codec is Codec.UNKNOWN:
        raise CorruptMessageError("unknown compression codec")
    if codec is Codec.ZSTD and magic < 2:
        raise UnsupportedCompressionTypeError(f"zstd is not allowed with message format v{magic}")


def compress(codec: Codec, data: Buffer, magic: int) -> bytes:
    """``data`` compressed with ``codec`` as Kafka writes it for message format ``magic``."""
    _check_codec(codec, magic)
    raw = bytes(data)
    if codec is Codec.NONE:
        return raw
    if codec is Codec.GZIP:
        return gzip.compress(raw)
    if codec is Codec.SNAPPY:
        return _snappy_compress(raw)
    if codec is Codec.LZ4:
        return _lz4_compress(raw, magic)
    return _zstd_compress(raw)


def decompress(codec: Codec, data: Buffer, magic: int) -> bytes:
    """The payload of a compressed wrapper message or batch of message format ``magic``."""
    _check_codec(codec, magic)
    raw = bytes(data)
    try:
        if codec is Codec.NONE:
            return raw
        if codec is Codec.GZIP:
            return gzip.decompress(raw)
        if codec is Codec.SNAPPY:
            return _snappy_decompress(raw)
        if codec is Codec.LZ4:
            return _lz4_decompress(raw, magic)
        return _zstd_decompress(raw)
    except (OSError, EOFError, ValueError, RuntimeError, zlib.error) as exc:
        raise CorruptMessageError(f"cannot decompress {codec} payload: {exc}") from exc
    except Exception as exc:  # snappy and zstandard raise their own error types
        if type(exc).__module__.split(".")[0] in ("snappy", "zstandard", "cramjam"):
            raise CorruptMessageError(f"cannot decompress {codec} payload: {exc}") from exc
        raise
