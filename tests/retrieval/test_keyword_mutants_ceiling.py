"""The ceiling after a removal: a term only removed documents held counts as an absent one (the rarest term)."""

from __future__ import annotations

from ragloom.keyword import BM25Index


def test_a_term_only_removed_documents_held_counts_as_the_rarest() -> None:
    index = BM25Index()
    index.add(["a", "b"], ["alpha beta", "gamma delta gamma"])
    assert 0 < index.ceiling("alpha") < index.ceiling("zebra")
    index.remove(["a"])
    assert index.ceiling("alpha") == index.ceiling("zebra") == index.ceiling("gamma") > index.ceiling("delta") > 0
    index.remove(["b"])
    assert index.ceiling("alpha") == index.ceiling("gamma") == 0.0  # nothing left to match
