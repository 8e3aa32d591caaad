"""Checkpoints that a crash cannot turn into a corrupt file.

A DuckDB checkpoint writes the WAL's changes into the database file. New data
goes to free blocks, but DuckDB packs its metadata 64 pieces to a 256 kB block
and writes a new piece into a free slot of a block whose other slots the last
checkpoint still points to: that block is rewritten in place. A process killed
during that ``pwrite`` (SIGKILL, the OOM killer) or a power cut leaves the block
half old, half new; its checksum no longer matches, and DuckDB refuses to open
the file ("Corrupt database file: computed checksum ... does not match").
Seen here: 1 in a few hundred random SIGKILLs of a re-ingest.

So the store takes every checkpoint itself (DuckDB's automatic ones are turned
off: :data:`ragloom_duckdb.database.SETTINGS`), and before it starts, copies the
file to ``<store>.ckpt`` (written under a temporary name, flushed to disk, then
renamed, so the name appears only for a whole copy). The copy is removed once
the checkpoint returns. Opening a file beside which a ``.ckpt`` remains means a
checkpoint was cut short: the store opens the file and reads every table in full
(each block's checksum is verified on read); if DuckDB finds a corrupt block,
the copy replaces the file. The copy is the file as the previous checkpoint left
it, and the WAL still holds every commit since (DuckDB empties the WAL only
after the checkpoint's last write), so replaying it loses nothing.

A checkpoint runs when the WAL passes :data:`WAL_CHECKPOINT_BYTES` after a write
and when the last store object of the process closes a file it wrote to; it
costs one copy of the file. Between checkpoints, DuckDB writes large inserts
straight to free blocks of the file and never rewrites a block in use.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

__all__ = ["WAL_CHECKPOINT_BYTES", "backup_path", "checkpoint", "discard_partial_copy", "is_corrupt", "recover", "verify", "wal_bytes"]

#: WAL size that triggers a checkpoint after a write (many batch commits share one checkpoint)
WAL_CHECKPOINT_BYTES = 256 * 1024 * 1024


def backup_path(path: str) -> str:
    """Where the copy taken before a checkpoint lives."""
    return path + ".ckpt"


def wal_bytes(path: str) -> int:
    """Size of the store's WAL (0 when there is none)."""
    try:
        return os.path.getsize(path + ".wal")
    except OSError:
        return 0


def _fsync_folder(path: str) -> None:
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _remove(path: str) -> None:
    """Delete ``path`` if it can be (best effort)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def discard_partial_copy(path: str) -> None:
    """Remove a copy that a crash cut short (call with the file's lock held)."""
    _remove(backup_path(path) + ".tmp")


def _copy_durably(source: str, target: str) -> None:
    """Copy ``source`` to ``target`` so that ``target`` exists only as a whole, flushed copy."""
    partial = target + ".tmp"
    try:
        shutil.copyfile(source, partial)
        with open(partial, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        _remove(partial)
        raise
    _fsync_folder(target)


def checkpoint(cursor: Any, path: str) -> None:
    """Checkpoint the WAL into ``path`` behind a copy of the file (nothing to do when the WAL is empty)."""
    if wal_bytes(path) == 0:
        return
    backup = backup_path(path)
    _copy_durably(path, backup)
    cursor.execute("CHECKPOINT")
    os.unlink(backup)


def is_corrupt(error: BaseException) -> bool:
    """Whether a DuckDB error reports a damaged file (not a lock, a permission or a full disk)."""
    text = str(error)
    return "Corrupt database file" in text or "computed checksum" in text or "MetadataReader" in text or "metadata pointer" in text


def verify(cursor: Any) -> None:
    """Read every row of every table of the current database (DuckDB checks each block's checksum on read)."""
    tables = cursor.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()
    for schema, table in tables:
        name = '"' + schema.replace('"', '""') + '"."' + table.replace('"', '""') + '"'
        cursor.execute(f"SELECT count(*), max(hash(t)) FROM {name} AS t").fetchall()


def recover(path: str, attach: Callable[[], Any], detach: Callable[[], None]) -> None:
    """Open a file whose last checkpoint may have been cut short; put the copy back when the file is damaged.

    ``attach`` opens the file and returns a cursor on it (raising DuckDB's error
    when it cannot); ``detach`` closes it again.
    """
    backup = backup_path(path)
    try:
        verify(attach())
    except Exception as exc:
        if not is_corrupt(exc):
            raise
        detach()
        os.replace(backup, path)
        _fsync_folder(path)
        verify(attach())
        return
    os.unlink(backup)
