"""PostgreSQL's binary formats built in numpy: ``COPY ... (FORMAT BINARY)`` data and array parameters.

A binary COPY row is ``int16 field count`` then, per field, ``int32 length`` and
the value's bytes. :func:`copy_data` lays out every row of a batch at once: each
column arrives as one byte blob with per-row lengths (fixed-width columns are a
numpy view, text columns one ``b"".join``), and one scatter per column places
the blobs; no Python runs per row and field (wide fixed-width values, the
vectors, are copied with one slice assignment per row: cheaper than a byte index).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_TRAILER = b"\xff\xff"

INT8_OID, INT4_OID, TEXT_OID, FLOAT4_OID = 20, 23, 25, 700

Column = tuple[np.ndarray, np.ndarray]  # (uint8 blob, int64 length of each row's value)


def fixed(values: np.ndarray, dtype: str) -> Column:
    """A fixed-width column (``>i8``, ``>i4``, ``>f4``...): one value per row."""
    array = np.ascontiguousarray(values, dtype=np.dtype(dtype))
    return array.view(np.uint8).reshape(-1), np.full(len(array), array.dtype.itemsize, dtype=np.int64)


def same(value: bytes, rows: int) -> Column:
    """A column holding the same bytes in every row."""
    return np.frombuffer(value * rows, dtype=np.uint8), np.full(rows, len(value), dtype=np.int64)


def varying(values: Sequence[bytes]) -> Column:
    """A column of per-row byte strings (encoded text, JSONB...)."""
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    return np.frombuffer(b"".join(values), dtype=np.uint8), lengths


def vectors(matrix: np.ndarray) -> Column:
    """pgvector's binary ``vector``: int16 dimension, int16 unused, float4 values (big-endian)."""
    rows, dim = matrix.shape
    record = np.empty(rows, dtype=[("dim", ">i2"), ("unused", ">i2"), ("values", ">f4", (dim,))])
    record["dim"] = dim
    record["unused"] = 0
    record["values"] = matrix
    return record.view(np.uint8).reshape(-1), np.full(rows, record.dtype.itemsize, dtype=np.int64)


def copy_data(columns: Sequence[Column]) -> bytes:
    """Binary COPY data (header, rows, trailer) of equally long columns, in the order given."""
    rows = len(columns[0][1])
    lengths = np.stack([length for _, length in columns], axis=1) if rows else np.zeros((0, len(columns)), np.int64)
    row_bytes = 2 + (4 + lengths).sum(axis=1)
    starts = np.zeros(rows, dtype=np.int64)
    np.cumsum(row_bytes[:-1], out=starts[1:])
    starts += len(COPY_HEADER)
    out = np.empty(len(COPY_HEADER) + int(row_bytes.sum()) + len(COPY_TRAILER), dtype=np.uint8)
    out[: len(COPY_HEADER)] = np.frombuffer(COPY_HEADER, dtype=np.uint8)
    out[len(out) - len(COPY_TRAILER) :] = np.frombuffer(COPY_TRAILER, dtype=np.uint8)
    _put(out, starts, np.full(rows, len(columns), dtype=">i2").view(np.uint8).reshape(rows, 2))
    position = starts + 2
    for (blob, _), field in zip(columns, lengths.T, strict=True):
        _put(out, position, field.astype(">i4").view(np.uint8).reshape(rows, 4))
        position += 4
        _scatter(out, position, blob, field)
        position += field
    return out.tobytes()


def _put(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """``values[i]`` (a row of bytes) at ``out[at[i]:]``."""
    out[at[:, None] + np.arange(values.shape[1])] = values


def _scatter(out: np.ndarray, at: np.ndarray, blob: np.ndarray, lengths: np.ndarray) -> None:
    """Row ``i``'s slice of ``blob`` (consecutive, ``lengths[i]`` bytes each) at ``out[at[i]:]``."""
    if not len(blob):
        return
    width = int(lengths[0])
    if width >= _WIDE and np.all(lengths == width):
        # wide fixed-width values (vectors): one memcpy per row beats an index per byte
        target, source = out.data, blob.data
        for position, begin in zip(at.tolist(), range(0, len(blob), width), strict=True):
            target[position : position + width] = source[begin : begin + width]
        return
    begins = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=begins[1:])
    out[np.repeat(at - begins, lengths) + np.arange(len(blob))] = blob


_WIDE = 256  # bytes


def array(values: np.ndarray, oid: int, dtype: str) -> bytes:
    """A one-dimensional array without NULLs in PostgreSQL's binary format (a parameter or ``array_send``)."""
    if not len(values):
        return np.array([0, 0, oid], dtype=">i4").tobytes()
    item = np.dtype([("length", ">i4"), ("value", dtype)])
    body = np.empty(len(values), dtype=item)
    body["length"] = item["value"].itemsize
    body["value"] = values
    return np.array([1, 0, oid, len(values), 1], dtype=">i4").tobytes() + body.tobytes()


def text_array(values: Sequence[str]) -> bytes:
    """A ``text[]`` value in binary format (tags: a few per chunk at most)."""
    if not values:
        return _EMPTY_TEXT_ARRAY
    parts = [np.array([1, 0, TEXT_OID, len(values), 1], dtype=">i4").tobytes()]
    for value in values:
        encoded = value.encode()
        parts.append(len(encoded).to_bytes(4, "big") + encoded)
    return b"".join(parts)


_EMPTY_TEXT_ARRAY = np.array([0, 0, TEXT_OID], dtype=">i4").tobytes()
