"""The bound on a compressed body's own size, from a real local server.

``max_response_bytes`` limits the decoded body; the bytes on the wire of a
compressed body are bounded too, at ``max_response_bytes`` plus an eighth plus
one decoding piece (64 KiB), so a body padded far beyond its content (empty
deflate blocks, a huge gzip comment) cannot stream forever.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom import ResponseTooLargeError
from ragloom_web.decoding import PIECE


def _padded_gzip(content: bytes, size: int) -> bytes:
    """A one-member gzip body of exactly ``size`` bytes decoding to ``content``; the padding is the header's comment."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = compressor.compress(content) + compressor.flush()
    trailer = struct.pack("<II", zlib.crc32(content), len(content))
    fixed = 10 + 1 + len(deflated) + len(trailer)  # header, the comment's terminating NUL, data, trailer
    assert size >= fixed
    header = b"\x1f\x8b\x08\x10" + b"\0\0\0\0" + b"\x00\xff"  # FLG = FCOMMENT, no mtime, unknown OS
    return header + b"c" * (size - fixed) + b"\0" + deflated + trailer


@pytest.mark.parametrize("limit", [100_000, 1_000_000])
def test_a_compressed_body_may_be_an_eighth_plus_a_piece_over_the_limit_on_the_wire(server: LocalServer, limit: int) -> None:
    budget = limit + limit // 8 + PIECE
    content = b" ".join([b"lumen lamp"] * 50)
    server.route("/at", _padded_gzip(content, budget), content_type="text/plain", headers={"Content-Encoding": "gzip"})
    server.route("/over", _padded_gzip(content, budget + 1), content_type="text/plain", headers={"Content-Encoding": "gzip"})
    loader = make_loader(allow_private_network=True, max_response_bytes=limit, on_too_large="fail", respect_robots=False)
    [document] = load_all(loader, server.url("/at"))
    assert document.text == content.decode()
    with pytest.raises(ResponseTooLargeError, match=rf"compressed body is over {budget} bytes \(max_response_bytes {limit}\)"):
        load_all(loader, server.url("/over"))
    truncating = make_loader(allow_private_network=True, max_response_bytes=limit, on_too_large="truncate", respect_robots=False)
    with pytest.raises(ResponseTooLargeError, match="compressed body is over"):  # no truncation of the wire bytes: a refusal
        load_all(truncating, server.url("/over"))
