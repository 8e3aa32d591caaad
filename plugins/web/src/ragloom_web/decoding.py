"""Content-Encoding decoding with bounded output.

Each decoder is a generator over the raw body that yields pieces of at most
about :data:`PIECE` decoded bytes, asking zlib / brotli for no more than that
per call. The caller stops pulling once its limit on decoded bytes is reached,
so a compression bomb costs one piece of memory, not its decoded size.
"""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterable, Iterator

import brotli

from ragloom.plugin import WebLoaderError

PIECE = 64 * 1024
ACCEPT_ENCODING = "gzip, deflate, br"


def parse_content_encoding(value: str | None) -> list[str]:
    """Codings in the order they were applied (``identity`` dropped)."""
    if not value:
        return []
    codings = [c.strip().lower() for c in value.split(",")]
    return [c for c in codings if c and c != "identity"]


def _zlib(chunks: Iterable[bytes], gzip: bool) -> Iterator[bytes]:
    decoder = None
    for chunk in chunks:
        data = chunk
        while data:
            if decoder is None:
                if gzip:
                    wbits = 16 + zlib.MAX_WBITS
                else:  # "deflate" is meant to be zlib-wrapped; some servers send raw deflate
                    wbits = zlib.MAX_WBITS if len(data) >= 2 and (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0 else -zlib.MAX_WBITS
                decoder = zlib.decompressobj(wbits)
            out = decoder.decompress(data, PIECE)
            if out:
                yield out
            data = decoder.unconsumed_tail
            if decoder.eof:
                data = decoder.unused_data
                if gzip and data.lstrip(b"\x00"):
                    decoder = None  # another gzip member follows
                else:
                    data = b""
    if decoder is not None and not decoder.eof:
        tail = decoder.flush()
        if tail:
            yield tail


def _brotli(chunks: Iterable[bytes]) -> Iterator[bytes]:
    decoder = brotli.Decompressor()
    for chunk in chunks:
        out = decoder.process(chunk, output_buffer_limit=PIECE)
        if out:
            yield out
        while not decoder.can_accept_more_data():
            out = decoder.process(b"", output_buffer_limit=PIECE)
            if not out:
                break
            yield out
    while not decoder.is_finished():  # output still buffered once all input is in
        out = decoder.process(b"", output_buffer_limit=PIECE)
        if not out:
            break
        yield out
    if not decoder.is_finished():
        raise WebLoaderError("the br (brotli) body ends before its stream does")


def _chunked(chunks: Iterable[bytes]) -> Iterator[bytes]:
    for chunk in chunks:
        for start in range(0, len(chunk), PIECE):
            yield chunk[start : start + PIECE]


def decode_stream(chunks: Iterable[bytes], codings: list[str]) -> Generator[bytes, None, None]:
    """The decoded body, piece by piece; WebLoaderError for an unknown coding or corrupt data."""
    stream: Iterable[bytes] = _chunked(chunks)
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            stream = _zlib(stream, gzip=True)
        elif coding == "deflate":
            stream = _zlib(stream, gzip=False)
        elif coding == "br":
            stream = _brotli(stream)
        else:
            raise WebLoaderError(f"unsupported Content-Encoding {coding!r} (supported: gzip, deflate, br)")
    try:
        yield from stream
    except zlib.error as exc:
        raise WebLoaderError(f"corrupt compressed body: {exc}") from None
    except brotli.error as exc:
        raise WebLoaderError(f"corrupt br (brotli) body: {exc}") from None
