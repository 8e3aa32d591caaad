"""The advisory-lock keys of sources are shared by every writer of one database, whatever its ragloom version."""

from __future__ import annotations

from ragloom_pgvector.store import source_lock_key


def test_source_lock_keys_are_pinned() -> None:
    # Two writers exclude each other only if they compute the same key for a source: a changed derivation
    # (digest, personalisation, byte order, sign) would let an old and a new ragloom ingest one source at once.
    assert source_lock_key("docs", "/srv/a.md") == 7049778689469693123
    assert source_lock_key("", "") == 3859961935282867007
    assert source_lock_key("docs", "https://example.org/ü") == 8018566515412105120
    assert source_lock_key("docs", "/srv/c.md") == -7724268086144663760  # signed 64 bits, as pg_advisory_xact_lock takes
