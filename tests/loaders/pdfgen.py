"""A tiny PDF writer for the tests: Unicode text pages, an info dictionary, RC4 encryption.

Text is drawn with a Type0 font (Identity-H) whose ToUnicode CMap maps each
glyph id to its character, so any Unicode text extracts exactly; no font
program is embedded (text extraction does not need one). Encryption is the
standard security handler, revision 2 (RC4, 40-bit key).
"""

from __future__ import annotations

import hashlib
import zlib

_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def _rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)


def _utf16_hex(text: str) -> str:
    return (b"\xfe\xff" + text.encode("utf-16-be")).hex().upper()


class _Encryption:
    def __init__(self, user_password: str, owner_password: str, file_id: bytes):
        user = (user_password.encode("latin-1") + _PAD)[:32]
        owner = (owner_password.encode("latin-1") + _PAD)[:32]
        self.o = _rc4(hashlib.md5(owner).digest()[:5], user)
        self.p = -44  # permissions: print + copy allowed
        digest = hashlib.md5(user + self.o + (self.p & 0xFFFFFFFF).to_bytes(4, "little") + file_id).digest()
        self.key = digest[:5]
        self.u = _rc4(self.key, _PAD)

    def encrypt(self, number: int, data: bytes) -> bytes:
        key = hashlib.md5(self.key + number.to_bytes(3, "little") + b"\x00\x00").digest()[:10]
        return _rc4(key, data)


def make_pdf(
    pages: list[str],
    *,
    info: dict[str, str] | None = None,
    user_password: str | None = None,
    compress: bool = True,
) -> bytes:
    """PDF bytes with one page per string (lines split on ``\\n``)."""
    chars = sorted({ch for page in pages for ch in page if ch != "\n"} | {" "})
    cid = {ch: i + 1 for i, ch in enumerate(chars)}
    file_id = hashlib.md5("".join(pages).encode("utf-8")).digest()
    crypt = _Encryption(user_password, "owner-secret", file_id) if user_password is not None else None

    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def string(number: int, text: str) -> bytes:
        raw = b"\xfe\xff" + text.encode("utf-16-be")
        if crypt is not None:
            raw = crypt.encrypt(number, raw)
        return b"<" + raw.hex().upper().encode() + b">"

    def stream(number: int, data: bytes, extra: bytes = b"") -> bytes:
        filters = b""
        if compress:
            data = zlib.compress(data)
            filters = b" /Filter /FlateDecode"
        if crypt is not None:
            data = crypt.encrypt(number, data)
        return b"<< /Length %d%s%s >>\nstream\n" % (len(data), filters, extra) + data + b"\nendstream"

    catalog = add(b"")
    pages_obj = add(b"")
    cmap_lines = [
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def",
        "1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    items = sorted(cid.items(), key=lambda kv: kv[1])
    for start in range(0, len(items), 100):
        block = items[start : start + 100]
        cmap_lines.append(f"{len(block)} beginbfchar")
        cmap_lines += [f"<{code:04X}> <{ch.encode('utf-16-be').hex().upper()}>" for ch, code in block]
        cmap_lines.append("endbfchar")
    cmap_lines.append("endcmap CMapName currentdict /CMap defineresource pop end end")
    tounicode = add(b"")
    objects[tounicode - 1] = stream(tounicode, "\n".join(cmap_lines).encode("ascii"))
    descriptor = add(
        b"<< /Type /FontDescriptor /FontName /TestSans /Flags 32 /FontBBox [0 -200 1000 900]"
        b" /ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>"
    )
    descendant = add(
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /TestSans"
        b" /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"
        b" /FontDescriptor %d 0 R /DW 500 /CIDToGIDMap /Identity >>" % descriptor
    )
    font = add(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /TestSans /Encoding /Identity-H"
        b" /DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (descendant, tounicode)
    )
    page_ids = []
    for text in pages:
        ops = ["BT /F1 10 Tf 14 TL 50 800 Td"]
        for line in text.split("\n"):
            ops.append("<" + "".join(f"{cid[ch]:04X}" for ch in line) + "> Tj T*")
        ops.append("ET")
        content = add(b"")
        objects[content - 1] = stream(content, "\n".join(ops).encode("ascii"))
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842]"
                b" /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_obj, font, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    info_id = None
    if info:
        info_id = add(b"")
        entries = b" ".join(b"/" + key.encode("ascii") + b" " + string(info_id, value) for key, value in info.items())
        objects[info_id - 1] = b"<< " + entries + b" >>"
    encrypt_id = None
    if crypt is not None:
        encrypt_id = add(
            b"<< /Filter /Standard /V 1 /R 2 /Length 40 /O <%s> /U <%s> /P %d >>"
            % (crypt.o.hex().encode(), crypt.u.hex().encode(), crypt.p)
        )

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"/Size %d /Root %d 0 R /ID [<%s> <%s>]" % (
        len(objects) + 1,
        catalog,
        file_id.hex().encode(),
        file_id.hex().encode(),
    )
    if info_id is not None:
        trailer += b" /Info %d 0 R" % info_id
    if encrypt_id is not None:
        trailer += b" /Encrypt %d 0 R" % encrypt_id
    out += b"trailer\n<< " + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
