"""Equal BM25 scores in the DuckDB store come back in row-id order, whatever order the rows became visible in: the
keyword index kept in step with commits ranks exactly like one rebuilt from the file (a reopened store)."""

from __future__ import annotations

from pathlib import Path

from duckdb_writes import NS, commit_source, seeded_vectors

from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore

#: every chunk holds the query term once and has the same length: all scores tie
SAME = ["lamp switch"] * 4


def _staged_first_committed_last(store: DuckDBStore) -> None:
    """Source /a.md staged first (the lower row ids) but committed after /b.md, by another session (visible last)."""
    with store.session(NS) as early:
        first = early.stage("/a.md")
        first.write(make_chunks("/a.md", 4, texts=SAME), seeded_vectors(4, seed=1))
        early.flush()
        with store.session(NS) as late:
            second = late.stage("/b.md")
            second.write(make_chunks("/b.md", 4, texts=SAME), seeded_vectors(4, seed=2))
            second.commit()
        first.commit()


def _ranking(store: DuckDBStore, top_k: int) -> list[tuple[str, float]]:
    return [(r.chunk_id, round(r.score, 9)) for r in store.keyword_search(NS, "lamp", top_k=top_k)]


def _row_order(store: DuckDBStore) -> list[str]:
    rows = store._cursor().execute("SELECT chunk_id FROM chunks WHERE source <> '/other.md' ORDER BY row_id").fetchall()
    return [chunk_id for (chunk_id,) in rows]


def test_ties_come_back_in_row_id_order_in_a_kept_index_and_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    with DuckDBStore(path=path) as store:
        commit_source(store, "/other.md", 2, seed=3, texts=["switch off", "off"])
        assert store.keyword_search(NS, "switch", top_k=1)  # the keyword index exists now: the commits below keep it in step
        _staged_first_committed_last(store)
        kept_all, kept_cut = _ranking(store, 8), _ranking(store, 3)
        by_row = _row_order(store)
    with DuckDBStore(path=path) as reopened:
        rebuilt_all, rebuilt_cut = _ranking(reopened, 8), _ranking(reopened, 3)
    assert len({score for _, score in kept_all}) == 1  # one score: the order is the tie order alone
    assert [cid for cid, _ in kept_all] == by_row
    assert kept_all == rebuilt_all
    assert kept_cut == rebuilt_cut == kept_all[:3]  # the cut at top_k takes the first rows among the tied, too
