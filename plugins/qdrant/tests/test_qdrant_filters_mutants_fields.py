"""The qdrant filters' stored layout and residual split, written against the qdrant_store mutation survivors.

The filter fields (``k_<h>``, ``n_<h>``, ``e``) are written into every point: their names and tokens are the
on-disk format of a local folder or a server collection, read back by the filters of a later process (or a
later ragloom-qdrant), so they are pinned here as literals.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragloom.plugin import Condition, parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore
from ragloom_qdrant.filters import filter_fields, is_residual, key_hash, token, translate

NS = "t"


def test_the_filter_fields_written_into_points_are_the_stored_layout() -> None:
    assert key_hash("title") == "8b340982acd28268"
    assert key_hash("year") == "650a290d2740096e"
    assert (token(True), token(False), token("Dune"), token(2021), token(2021.0), token(2.5)) == ("b:1", "b:0", "s:Dune", "n:2021", "n:2021", "n:2.5")
    assert filter_fields({"title": "Dune", "year": 2021, "ok": True, "no": False, "x": None, "f": 2.5, "inf": float("inf"), "l": [1]}) == {
        "k_8b340982acd28268": "s:Dune",
        "k_650a290d2740096e": "n:2021",
        "n_650a290d2740096e": 2021.0,
        "k_098d34cae67faa16": "b:1",
        "k_7e8eafb96f16fae7": "b:0",
        "k_2e960c8fb6398edb": "n:2.5",
        "n_2e960c8fb6398edb": 2.5,
        "e": ["8b340982acd28268", "650a290d2740096e", "098d34cae67faa16", "7e8eafb96f16fae7", "2e960c8fb6398edb", "1060634d1fb771b2", "62b585a7f2277ad6"],
    }


def test_a_null_value_does_not_hide_the_keys_after_it(qdrant_store: Callable[..., QdrantStore]) -> None:
    fields = filter_fields({"a": None, "b": "x", "c": 3})
    assert fields["k_" + key_hash("b")] == "s:x" and fields["n_" + key_hash("c")] == 3.0
    assert fields["e"] == [key_hash("b"), key_hash("c")]
    store = qdrant_store()
    chunks = make_chunks("/a.md", 1, metadata={"a": None, "b": "x", "c": 3})
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(chunks, np.ones((1, 8), dtype=np.float32))
        stage.commit()
    for spec in ({"b": "x"}, {"c": {"$gte": 3}}, {"b": {"$exists": True}}, {"a": {"$exists": False}}):
        assert [r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=parse_filter(spec))] == [chunks[0].id], spec


def test_a_metadata_key_with_a_lone_surrogate_is_stored_and_filtered(qdrant_store: Callable[..., QdrantStore]) -> None:
    key = "\ud800key"
    assert key_hash(key) == "002540866622d92d"
    assert filter_fields({key: "x"}) == {"k_002540866622d92d": "s:x", "e": ["002540866622d92d"]}
    store = qdrant_store()
    chunks = make_chunks("/a.md", 2, metadata={key: "x"})
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(chunks, np.ones((2, 8), dtype=np.float32))
        stage.commit()
    found = store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=Condition(key, "$eq", "x"))
    assert sorted(r.chunk_id for r in found) == sorted(c.id for c in chunks)
    assert store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=Condition(key, "$eq", "y")) == []


def test_only_string_orderings_outside_tags_are_residual() -> None:
    assert is_residual(Condition("title", "$lt", "b"))
    assert is_residual(Condition("source", "$gte", "/b"))
    assert not is_residual(Condition("tags", "$lt", "b"))  # refused by the translation, never evaluated by the plugin
    assert not is_residual(Condition("title", "$eq", "b"))
    assert not is_residual(Condition("title", "$in", ["b"]))
    assert not is_residual(Condition("year", "$gt", 2000))
    assert not is_residual(Condition("tags", "$eq", "b"))


def test_translate_names_the_payload_fields_it_reads() -> None:
    h = key_hash("year")
    assert translate(Condition("year", "$exists", True))[1] == {"e"}
    assert translate(Condition("year", "$exists", False))[1] == {"e"}
    assert translate(Condition("year", "$gt", 2000))[1] == {f"n_{h}"}
    assert translate(Condition("year", "$eq", 2000))[1] == {f"k_{h}"}
    assert translate(Condition("year", "$lt", "b"))[1] == set()
    assert translate(Condition("source", "$eq", "/a.md"))[1] == set()
    assert translate(None) == (None, set())
