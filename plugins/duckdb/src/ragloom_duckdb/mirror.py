"""An in-memory copy of the file's vectors and chunk records, for searches at numpy speed.

DuckDB's own ``array_cosine_similarity`` scan costs about 9x a numpy
matrix-vector product on the same data, and fetching ten rows by id costs a
scan of the table (milliseconds at 100k rows), so the store keeps the
(normalised) vectors of the file in one float32 matrix and the records needed
to build a Result (:data:`Payload`) in a list beside it. Both are loaded once
from the file on the first search and then changed by the store in the same
critical section as the transaction that changes the file. Rows whose
``source_type`` is not ``document`` are held (their row ids keep the order) but
never become visible, so no search returns them. Rows are identified by the ``row_id``
column, kept in ascending order (row ids only grow), so a row id maps to its
position with a binary search. Deleted rows are masked and compacted into new
arrays when they are the majority.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: ``(chunk_id, document_id, text, source, metadata_json, start, end, tags)``
Payload = tuple[str, str, str, str, str, int, int, Any]


class VectorMirror:
    """Row ids, namespace codes, visibility and vectors of every row of the file."""

    def __init__(self, dim: int):
        self.dim = dim
        self.size = 0
        self.dead = 0
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.namespaces = np.zeros(0, dtype=np.int32)
        self.visible = np.zeros(0, dtype=bool)
        self.documents = np.zeros(0, dtype=bool)  # source_type == "document": may become visible
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.payloads: list[Payload | None] = []
        self._codes: dict[str, int] = {}

    def code(self, namespace: str, *, create: bool = False) -> int | None:
        """Integer code of a namespace (None when never seen and not ``create``)."""
        code = self._codes.get(namespace)
        if code is None and create:
            code = self._codes[namespace] = len(self._codes)
        return code

    def _reserve(self, extra: int) -> None:
        needed = self.size + extra
        capacity = len(self.row_ids)
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2, 1024)
        for name, shape in (("row_ids", None), ("namespaces", None), ("visible", None), ("documents", None), ("vectors", self.dim)):
            old = getattr(self, name)
            new = np.zeros((new_capacity, shape) if shape else new_capacity, dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def append(
        self,
        row_ids: np.ndarray,
        namespaces: str,
        visible: np.ndarray | bool,
        vectors: np.ndarray,
        payloads: list[Payload],
        documents: np.ndarray | bool = True,
    ) -> None:
        """Add rows whose ids are all greater than every id present (``documents``: which are ``document`` rows)."""
        count = len(row_ids)
        if count == 0:
            return
        if self.size and int(row_ids[0]) <= int(self.row_ids[self.size - 1]):
            raise ValueError("row ids must grow")
        self._reserve(count)
        start, end = self.size, self.size + count
        self.row_ids[start:end] = row_ids
        self.namespaces[start:end] = self.code(namespaces, create=True) or 0  # create=True always gives a code
        self.documents[start:end] = documents
        self.visible[start:end] = self.documents[start:end] & visible
        self.vectors[start:end] = vectors
        self.payloads.extend(payloads)
        self.size = end

    def load(
        self,
        row_ids: np.ndarray,
        namespaces: list[str],
        visible: np.ndarray,
        vectors: np.ndarray,
        payloads: list[Payload],
        documents: np.ndarray,
    ) -> None:
        """Fill an empty mirror with the rows of the file, in ascending row id order."""
        names = sorted(set(namespaces))
        codes = {name: self.code(name, create=True) for name in names}
        self.row_ids = np.asarray(row_ids, dtype=np.int64)
        self.namespaces = np.fromiter((codes[n] for n in namespaces), dtype=np.int32, count=len(namespaces))
        self.documents = np.asarray(documents, dtype=bool)
        self.visible = np.asarray(visible, dtype=bool) & self.documents
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(row_ids), self.dim)
        self.payloads = list(payloads)
        self.size = len(row_ids)

    def positions(self, row_ids: np.ndarray) -> np.ndarray:
        """Positions of present row ids (unknown ids are dropped)."""
        ids = np.asarray(row_ids, dtype=np.int64)
        present = self.row_ids[: self.size]
        where = np.searchsorted(present, ids)
        where = np.minimum(where, max(self.size - 1, 0))
        found = (present[where] == ids) if self.size else np.zeros(len(ids), dtype=bool)
        return where[found]

    def show(self, row_ids: np.ndarray) -> np.ndarray:
        """Mark rows visible (rows of another ``source_type`` stay invisible); return the row ids now visible."""
        where = self.positions(row_ids)
        self.visible[where] = self.documents[where]
        return self.row_ids[where[self.documents[where]]]

    def drop(self, row_ids: np.ndarray) -> None:
        """Forget rows (masked now, compacted later)."""
        where = self.positions(row_ids)
        live = where[self.namespaces[where] >= 0]
        self.visible[live] = False
        self.namespaces[live] = -1
        for position in live.tolist():
            self.payloads[position] = None
        self.dead += len(live)
        if self.size > 4096 and self.dead * 2 > self.size:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.namespaces[: self.size] >= 0)
        self.row_ids = self.row_ids[keep]
        self.namespaces = self.namespaces[keep]
        self.visible = self.visible[keep]
        self.documents = self.documents[keep]
        self.vectors = self.vectors[keep]
        self.payloads = [self.payloads[i] for i in keep.tolist()]
        self.size = len(keep)
        self.dead = 0

    def allowed(self, namespace: str) -> np.ndarray:
        """Mask of the visible rows of a namespace (length ``size``)."""
        code = self._codes.get(namespace)
        if code is None:
            return np.zeros(self.size, dtype=bool)
        return self.visible[: self.size] & (self.namespaces[: self.size] == code)

    def top_k(self, query: np.ndarray, allowed: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, scores)`` of the k best allowed rows, best first (ties: row order)."""
        total = int(allowed.sum())
        k = min(k, total)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self.vectors[: self.size] @ query
        if total < self.size:
            scores[~allowed] = -np.inf
        best = np.argpartition(-scores, k - 1)[:k] if k < self.size else np.flatnonzero(allowed)
        order = best[np.lexsort((best, -scores[best]))]
        return order, scores[order]
