"""The HNSW index of a DuckDB store: derived data, never the only copy of anything.

The index is a `usearch <https://github.com/unum-cloud/usearch>`_ graph held in
the process, keyed by ``row_id`` over the *visible* rows of every namespace,
with the vectors of the :class:`~ragloom_duckdb.mirror.VectorMirror` (which is
loaded from the committed rows of the file). It is never stored inside the
DuckDB file, so no crash can leave the file with an index that disagrees with
its tables. To spare a rebuild on every open, it is saved to a side file
``<store>.hnsw``:

- written whole to a temporary file, fsynced, then renamed over the old one, so
  the side file is always some complete earlier snapshot (a kill mid-save
  leaves the previous one);
- carrying a BLAKE2b digest of its bytes, checked before the bytes reach the
  graph loader, and the graph parameters (``m``, ``ef_construction``,
  dimension), which must match the configuration;
- *reconciled* against the file when loaded: rows visible now but missing
  (committed after the snapshot, e.g. by a process killed before it saved) are
  added, and every row's stored vector is compared with the file's, so a side
  file of another or a recreated store cannot answer for this one (a key whose
  row id now holds another vector is removed and added again). When the graph
  would be more dead than live, when more than half of the rows are missing, or
  when the side file is missing, unreadable or built with other parameters, the
  graph is rebuilt from the mirror.

Rows that stop being visible (replaced or deleted) stay in the graph as *dead*
keys: searches skip them (the store maps keys through the mirror's visible
rows), and they keep the graph navigable — removing nodes from an HNSW graph
without repairing it left some live rows unreachable in testing. After opening,
:meth:`HnswIndex.apply` keeps the graph in step with every commit and delete of
the process (under the store's lock, after the transaction committed); the
graph is rebuilt when dead keys outnumber live ones three to one, and the side
file is rewritten when enough work would otherwise be lost (:data:`SAVE_EVERY`
rows) and when the store closes.

Files written by ragloom-duckdb before this module held a vss HNSW index inside
the database; :func:`drop_persisted_index` removes it on the first read-write
open (:func:`persisted_index` tells whether one is there).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ragloom.plugin import StoreError
from ragloom_duckdb.mirror import VectorMirror

__all__ = ["SAVE_EVERY", "HnswIndex", "drop_persisted_index", "persisted_index", "side_path"]

_MAGIC = b"RAGLOOM-HNSW\x00\x00\x00\x01"
_FORMAT = 1
_DIGEST = 32
#: changed rows (added, removed or marked dead since the side file was written) after which a change saves it
SAVE_EVERY = 10_000
#: a reconciliation that would add more than this share of the visible rows rebuilds instead
_REBUILD_SHARE = 0.5


def side_path(store_path: str) -> str | None:
    """Where the index of ``store_path`` is saved (None for ``:memory:``)."""
    return None if store_path == ":memory:" else store_path + ".hnsw"


def _new_graph(dim: int, m: int, ef_construction: int, ef_search: int) -> Any:
    try:
        from usearch.index import Index
    except ImportError as exc:  # pragma: no cover - a dependency of this package
        raise StoreError("index = 'hnsw' needs usearch: pip install ragloom-duckdb") from exc
    return Index(ndim=dim, metric="cos", dtype="f32", connectivity=m, expansion_add=ef_construction, expansion_search=ef_search)


class HnswIndex:
    """The HNSW graph over the visible rows of one open store, and its side file."""

    def __init__(self, path: str | None, dim: int, *, m: int, ef_construction: int, ef_search: int, threads: int | None):
        self.path = path
        self.dim = dim
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.threads = threads or 0
        self.graph: Any = None
        #: keys of the graph whose rows are not visible any more
        self.dead = 0
        #: rows added or removed since the side file was last written
        self.unsaved = 0
        #: what opening cost: ``{"source": "side file" | "built", "added", "removed", "seconds"}``
        self.opened: dict[str, Any] = {}

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str | None, mirror: VectorMirror, *, m: int, ef_construction: int, ef_search: int,
             threads: int | None) -> HnswIndex:
        """The index of the mirror's visible rows: the side file reconciled, or a new build."""
        start = time.perf_counter()
        index = cls(path, mirror.dim, m=m, ef_construction=ef_construction, ef_search=ef_search, threads=threads)
        want = mirror.row_ids[: mirror.size][mirror.visible[: mirror.size]]
        index._remove_leftovers()
        graph = index._load()
        added = removed = 0
        source = "built"
        if graph is not None:
            index.graph = graph
            plan = index._reconcile_plan(mirror, want)
            if plan is not None:
                stale, missing, dead = plan
                index._remove(stale)
                index._add(mirror, missing)
                index.dead = dead
                added, removed, source = len(missing), len(stale), "side file"
        if source == "built":
            index._rebuild(mirror, want)
            added = len(want)
        index.unsaved = added + removed
        if index.unsaved >= SAVE_EVERY or (source == "built" and added):
            index.save()
        index.opened = {"source": source, "added": added, "removed": removed, "seconds": time.perf_counter() - start}
        return index

    def _load(self) -> Any:
        """The graph of a valid side file built with this configuration, else None."""
        if self.path is None:
            return None
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        if len(data) < len(_MAGIC) + 8 + _DIGEST or not data.startswith(_MAGIC):
            return None
        body, digest = memoryview(data)[:-_DIGEST], data[-_DIGEST:]  # views: the file is read into memory once
        if hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
            return None
        offset = len(_MAGIC)
        header_size = int.from_bytes(body[offset : offset + 8], "little")
        try:
            header = json.loads(bytes(body[offset + 8 : offset + 8 + header_size]))
        except ValueError:
            return None
        expected = {"format": _FORMAT, "dim": self.dim, "m": self.m, "ef_construction": self.ef_construction}
        if not isinstance(header, dict) or any(header.get(key) != value for key, value in expected.items()):
            return None
        from usearch.index import Index

        try:
            graph = Index.restore(
                body[offset + 8 + header_size :], connectivity=self.m, expansion_add=self.ef_construction, expansion_search=self.ef_search
            )
        except Exception:  # noqa: BLE001 - a side file that does not load is rebuilt
            return None
        if graph is None or graph.ndim != self.dim:
            return None
        graph.expansion_add = self.ef_construction  # type: ignore[misc]  # settable at run time; the stubs say read-only
        graph.expansion_search = self.ef_search  # type: ignore[misc]
        return graph

    def _reconcile_plan(self, mirror: VectorMirror, want: np.ndarray) -> tuple[np.ndarray, np.ndarray, int] | None:
        """``(stale, missing, dead)`` that bring the loaded graph to ``want``; None: rebuild.

        ``stale``: keys to remove (their row id now holds another vector); ``missing``: row ids
        to add; ``dead``: keys left in the graph whose rows are not visible.
        """
        have = np.unique(np.asarray(self.graph.keys, dtype=np.int64))
        missing = np.setdiff1d(want, have, assume_unique=True)
        # keys whose row id is in the file (visible or staged): their vector must be the file's
        known = have[np.isin(have, mirror.row_ids[: mirror.size], assume_unique=True)]
        changed = np.zeros(0, dtype=np.int64)
        if len(known):
            stored = np.vstack(self.graph.get(known.astype(np.uint64), dtype="f32")).reshape(len(known), self.dim)
            actual = mirror.vectors[mirror.positions(known)]
            changed = known[np.abs(stored - actual).max(axis=1) > 1e-6]
        live = np.intersect1d(have, want, assume_unique=True)
        stale = np.union1d(changed, np.setdiff1d(known, want, assume_unique=True))  # a staged row may be committed later
        dead = len(have) - len(live) - len(np.setdiff1d(stale, live, assume_unique=True))
        missing = np.union1d(missing, np.intersect1d(changed, want, assume_unique=True))
        if len(missing) > _REBUILD_SHARE * max(len(want), 1) or dead > len(want):
            return None
        return stale, missing, dead

    def _rebuild(self, mirror: VectorMirror, want: np.ndarray) -> None:
        self.graph = _new_graph(self.dim, self.m, self.ef_construction, self.ef_search)
        self.dead = 0
        self._add(mirror, want)

    # ------------------------------------------------------------------ changes

    def _add(self, mirror: VectorMirror, row_ids: np.ndarray) -> None:
        if len(row_ids):
            vectors = mirror.vectors[mirror.positions(np.asarray(row_ids, dtype=np.int64))]
            self.graph.add(np.asarray(row_ids, dtype=np.uint64), np.ascontiguousarray(vectors), threads=self.threads if len(row_ids) >= 1000 else 1)

    def _remove(self, row_ids: np.ndarray) -> None:
        if len(row_ids):
            self.graph.remove(np.asarray(row_ids, dtype=np.uint64))

    def apply(self, mirror: VectorMirror, shown: np.ndarray, dropped: np.ndarray) -> None:
        """Follow a committed change: ``dropped`` rows leave the graph, ``shown`` rows join it.

        Called after the mirror took the change (the shown rows' vectors are read from it).
        """
        dropped = np.asarray(dropped, dtype=np.int64)
        if len(dropped):
            present = int(np.asarray(self.graph.contains(dropped.astype(np.uint64)), dtype=bool).sum())
            self.dead += present  # left in the graph, skipped by searches
            self.unsaved += present
        shown = np.asarray(shown, dtype=np.int64)
        if len(shown):
            in_graph = np.asarray(self.graph.contains(shown.astype(np.uint64)), dtype=bool).reshape(-1)
            new = shown[~in_graph]
            self._add(mirror, new)
            self.unsaved += len(new)
        live = len(self.graph) - self.dead
        if self.dead > 3 * live + 1000:
            self._rebuild(mirror, mirror.row_ids[: mirror.size][mirror.visible[: mirror.size]])
            self.unsaved = len(self.graph) or 1
        if self.unsaved >= max(SAVE_EVERY, len(self.graph) // 10):
            self.save()

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self.graph)

    def search(self, query: np.ndarray, limit: int, ef_search: int | None = None) -> np.ndarray:
        """Row ids of (about) the ``limit`` nearest rows, nearest first (``ef_search``: beam width)."""
        if ef_search is not None and ef_search != self.graph.expansion_search:
            self.graph.expansion_search = ef_search
        matches = self.graph.search(np.asarray(query, dtype=np.float32), int(limit), threads=1)
        return np.asarray(matches.keys, dtype=np.int64)

    # ------------------------------------------------------------------ side file

    def save(self) -> None:
        """Write the side file (atomically) if the graph changed since it was written; best effort."""
        if self.path is None or self.graph is None:
            return
        header = json.dumps(
            {"format": _FORMAT, "dim": self.dim, "m": self.m, "ef_construction": self.ef_construction, "rows": len(self.graph)}
        ).encode()
        parts = (_MAGIC, len(header).to_bytes(8, "little"), header, self.graph.save())
        hasher = hashlib.blake2b(digest_size=_DIGEST)
        for part in parts:
            hasher.update(part)
        folder = os.path.dirname(os.path.abspath(self.path))
        self._remove_leftovers()
        temporary = None
        try:
            handle, temporary = tempfile.mkstemp(prefix=os.path.basename(self.path) + ".", suffix=".tmp", dir=folder)
            with os.fdopen(handle, "wb") as out:
                for part in parts:
                    out.write(part)
                out.write(hasher.digest())
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
            temporary = None
            _fsync_folder(folder)
        except OSError:
            return  # derived data: the next open reconciles or rebuilds
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
        self.unsaved = 0

    def _remove_leftovers(self) -> None:
        """Delete temporary files of saves that were killed (a concurrent save losing its file skips that save)."""
        if self.path is None:
            return
        pattern = glob.escape(os.path.abspath(self.path)) + ".*.tmp"
        for leftover in glob.glob(pattern):
            try:
                os.unlink(leftover)
            except OSError:
                pass

    def close(self) -> None:
        """Save what changed since the last save and release the graph."""
        if self.unsaved:
            self.save()
        self.graph = None


def _fsync_folder(folder: str) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# ---------------------------------------------------------------------- files of earlier versions


def persisted_index(cursor: Any) -> bool:
    """Whether the file holds an index of an earlier ragloom-duckdb (a vss HNSW index or its marker)."""
    marker = cursor.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0]
    indexes = cursor.execute(
        "SELECT count(*) FROM duckdb_indexes() WHERE database_name = current_database() AND table_name = 'chunks'"
    ).fetchone()[0]
    return bool(marker or indexes)


def drop_persisted_index(cursor: Any, checkpoint: Callable[[Any], None]) -> None:
    """Remove an earlier version's HNSW index and marker from the file and ``checkpoint`` (no extension needed)."""
    names = [
        row[0]
        for row in cursor.execute(
            "SELECT index_name FROM duckdb_indexes() WHERE database_name = current_database() AND table_name = 'chunks'"
        ).fetchall()
    ]
    cursor.execute("BEGIN TRANSACTION")
    try:
        for name in names:
            cursor.execute(f'DROP INDEX IF EXISTS "{name.replace(chr(34), chr(34) * 2)}"')
        cursor.execute("DELETE FROM ragloom_meta WHERE key = 'hnsw'")
    except BaseException:
        cursor.execute("ROLLBACK")
        raise
    cursor.execute("COMMIT")
    checkpoint(cursor)
