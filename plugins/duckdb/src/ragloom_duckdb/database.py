"""Opening a DuckDB file: extensions, locking, schema version, per-thread cursors.

Every store object of one process that opens the same file shares one
:class:`Database` (one DuckDB instance, one lock, one vector mirror), so two
objects can never hold diverging copies. No extension is loaded: the HNSW
index is derived data kept outside the file (:mod:`ragloom_duckdb.hnsw`).
"""

from __future__ import annotations

import glob
import os
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragloom.plugin import StoreError
from ragloom_duckdb import checkpoint as checkpoints

SCHEMA_NAME = "ragloom-duckdb"
SCHEMA_VERSION = 3

#: Settings of every database instance the store opens. Embedding floats do not
#: compress (ALP/ALPRD analysis made bulk inserts and checkpoints ~1.5x slower and
#: the file larger in bench/duckdb); DuckDB never checkpoints on its own (not at a
#: WAL size, not at close): the store takes every checkpoint behind a copy of the
#: file (:mod:`ragloom_duckdb.checkpoint`), because a crash during DuckDB's own
#: could leave a corrupt file; without late materialization an HNSW top-k query is the index scan alone (with
#: it, DuckDB adds a semi-join over a full scan of the table).
SETTINGS = (
    "SET GLOBAL disabled_compression_methods = 'alp,alprd'",
    "SET GLOBAL checkpoint_threshold = '1000TB'",
    "PRAGMA disable_checkpoint_on_shutdown",
    "SET GLOBAL late_materialization_max_rows = 0",
)

_OPEN: dict[str, Database] = {}
_OPEN_LOCK = threading.Lock()


def _import_duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - a dependency of this package
        raise StoreError("the duckdb store needs duckdb: pip install ragloom-duckdb") from exc
    return duckdb


def extension_path(name: str) -> str:
    """The ``.duckdb_extension`` file shipped by the ``duckdb-extension-<name>`` wheel."""
    try:
        module = __import__(f"duckdb_extension_{name}")
    except ImportError as exc:
        raise StoreError(f"the duckdb store needs the {name} extension: pip install duckdb-extension-{name}") from exc
    duckdb = _import_duckdb()
    folder = Path(module.__file__ or ".").parent / "extensions"
    exact = sorted(glob.glob(str(folder / f"v{duckdb.__version__}" / "*.duckdb_extension")))
    found = exact or sorted(glob.glob(str(folder / "*" / "*.duckdb_extension")))
    if not found:
        raise StoreError(f"no {name} extension file for duckdb {duckdb.__version__} under {folder}")
    return found[0]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Database:
    """One open DuckDB file (or ``:memory:`` database) and everything cached about it."""

    def __init__(self, path: str, *, read_only: bool, threads: int | None, memory_limit: str | None = None):
        self.path = path
        self.read_only = read_only
        self.lock = threading.RLock()
        self.refs = 0
        self.dim: int | None = None
        self.next_row_id = 0
        self.mirror: Any = None
        self.keyword: dict[str, Any] = {}
        #: the HNSW index (:class:`ragloom_duckdb.hnsw.HnswIndex`), opened by the first HNSW search
        self.hnsw: Any = None
        self._local = threading.local()
        config: dict[str, Any] = {}
        if threads is not None:
            config["threads"] = threads
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
            if path != ":memory:":
                config["temp_directory"] = path + ".tmp"  # what spills beyond the limit (DuckDB's default for a file)
        self._config = config
        self._connect()
        self._cursors: list[Any] = []

    def _connect(self) -> None:
        duckdb = _import_duckdb()
        path, read_only = self.path, self.read_only
        self.con = duckdb.connect(":memory:", config=self._config)
        try:
            for setting in SETTINGS:
                self.con.execute(setting)
            self.threads = int(self.con.execute("SELECT current_setting('threads')").fetchone()[0])
            if path != ":memory:":
                if read_only and not os.path.exists(path):
                    raise StoreError(f"cannot open DuckDB store {path} read-only: no such file")
                if not read_only:
                    _make_parent(path)
                if not read_only and os.path.exists(checkpoints.backup_path(path)):
                    checkpoints.recover(path, self._attach, self._detach)
                else:
                    self._attach()
                if not read_only:
                    checkpoints.discard_partial_copy(path)
        except duckdb.Error as exc:
            self.con.close()
            raise _open_error(path, exc, read_only=read_only) from exc
        except BaseException:
            self.con.close()
            raise

    def _attach(self) -> Any:
        mode = " (READ_ONLY)" if self.read_only else ""
        self.con.execute(f"ATTACH {_quote(self.path)} AS ragloom_store{mode}")
        self.con.execute("USE ragloom_store")
        return self.con

    def _detach(self) -> None:
        self.con.execute("USE memory")
        self.con.execute("DETACH DATABASE IF EXISTS ragloom_store")

    def checkpoint(self, cursor: Any, *, due_only: bool = False) -> None:
        """Write the WAL into the file behind a copy (:func:`ragloom_duckdb.checkpoint.checkpoint`).

        ``due_only``: only once the WAL has passed :data:`~ragloom_duckdb.checkpoint.WAL_CHECKPOINT_BYTES`.
        Call with :attr:`lock` held.
        """
        if self.read_only or self.path == ":memory:":
            return
        if due_only and checkpoints.wal_bytes(self.path) < checkpoints.WAL_CHECKPOINT_BYTES:
            return
        with self.single_threaded(cursor):
            try:
                checkpoints.checkpoint(cursor, self.path)
            except OSError as exc:
                raise StoreError(
                    f"cannot checkpoint DuckDB store {self.path}: copying it to {checkpoints.backup_path(self.path)} "
                    f"failed ({exc.strerror or exc}); the WAL keeps every commit, free disk space for one more copy of the file"
                ) from None

    @contextmanager
    def single_threaded(self, cursor: Any) -> Iterator[None]:
        """Run a bulk insert and its commit on one DuckDB thread (~1.3x faster than two in bench/duckdb)."""
        if self.threads == 1:
            yield
            return
        cursor.execute("SET GLOBAL threads = 1")
        try:
            yield
        finally:
            cursor.execute(f"SET GLOBAL threads = {self.threads}")

    def cursor(self) -> Any:
        """This thread's cursor (DuckDB connections are not shared between threads)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self.con.cursor()
            if self.path != ":memory:":
                cursor.execute("USE ragloom_store")
            self._local.cursor = cursor
            with self.lock:
                self._cursors.append(cursor)
        return cursor

    def close(self) -> None:
        """Save the HNSW index if it changed, checkpoint what was written, close every cursor and the database.

        A checkpoint that fails leaves the WAL in place (replayed at the next open): nothing is lost.
        """
        if self.hnsw is not None:
            self.hnsw.close()
            self.hnsw = None
        try:
            self.checkpoint(self.cursor())
        except Exception as exc:  # noqa: BLE001 - closing must not fail; the WAL keeps every commit
            warnings.warn(f"DuckDB store {self.path}: checkpoint at close failed, the WAL is kept: {exc}", stacklevel=2)
        for cursor in self._cursors:
            try:
                cursor.close()
            except Exception:  # noqa: BLE001 - closing must not fail
                pass
        self._cursors.clear()
        self.con.close()


def _make_parent(path: str) -> None:
    """Create the folder of a store file; StoreError when the machine refuses (under /proc, a parent that is a file)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder of DuckDB store {path}: {exc.strerror or exc} ({exc.filename})") from None


def _held_by_readers(path: str) -> bool:
    """True when the file can be opened read-only now: whoever holds its lock only reads."""
    try:
        probe = _import_duckdb().connect(path, read_only=True)
    except Exception:  # noqa: BLE001 - any failure means a writer holds it (or it cannot be read at all)
        return False
    probe.close()
    return True


def _open_error(path: str, exc: Exception, *, read_only: bool = False) -> StoreError:
    text = str(exc)
    locked = "could not set lock" in text.lower() or "conflicting lock" in text.lower()
    if checkpoints.is_corrupt(exc):
        if os.path.exists(checkpoints.backup_path(path)):
            return StoreError(
                f"DuckDB store {path} is damaged by a checkpoint cut short ({text.strip().splitlines()[0]}); "
                f"open it once without read_only to put back the copy {checkpoints.backup_path(path)}"
            )
        return StoreError(f"DuckDB store {path} is damaged: {text.strip().splitlines()[0]}")
    if locked and not read_only and _held_by_readers(path):
        return StoreError(
            f"DuckDB store {path} is open read-only in another process ({text.strip().splitlines()[0]}); "
            "a writer needs the file to itself: close the readers first, or open this one with read_only = true in [store]"
        )
    if locked:
        return StoreError(
            f"DuckDB store {path} is open for writing in another process ({text.strip().splitlines()[0]}); "
            "processes can share one file only when all of them open it with read_only = true in [store] (queries only); "
            "otherwise let one process do the writes and the queries"
        )
    return StoreError(f"cannot open DuckDB store {path}: {text}")


def acquire(path: str, *, read_only: bool, threads: int | None, memory_limit: str | None = None) -> Database:
    """The shared Database of ``path`` (opened on first use)."""
    if "\x00" in path:
        raise StoreError(f"DuckDB store path {path!r} contains a NUL byte")
    if path == ":memory:":
        database = Database(path, read_only=False, threads=threads, memory_limit=memory_limit)
        database.refs = 1
        return database
    key = os.path.realpath(path)
    with _OPEN_LOCK:
        shared = _OPEN.get(key)
        if shared is not None:
            database = shared
            if database.read_only != read_only:
                mode = "read-only" if database.read_only else "read-write"
                raise StoreError(f"DuckDB store {path} is already open {mode} in this process; open it the same way")
        else:
            database = _OPEN[key] = Database(path, read_only=read_only, threads=threads, memory_limit=memory_limit)
        database.refs += 1
        return database


def release(database: Database) -> None:
    """Drop one reference; close the file with the last one."""
    with _OPEN_LOCK:
        database.refs -= 1
        if database.refs > 0:
            return
        if database.path != ":memory:":
            _OPEN.pop(os.path.realpath(database.path), None)
    with database.lock:
        database.close()
