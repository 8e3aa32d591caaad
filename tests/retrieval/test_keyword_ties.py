"""The BM25 index's tie order: equal scores come back in insertion order, or with ``ties_by_key`` in key order, at the
``top_k`` cut as well as within the results (the same ranking as sorting every score by hand)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.keyword import BM25Index

WORDS = ["lamp", "switch", "reset", "cord"]
documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), min_size=1, max_size=30)


def _by_hand(index: BM25Index, query: str, top_k: int, tie: dict[int, int]) -> list[tuple[int, float]]:
    scored = sorted(index.score_all(query).items(), key=lambda item: (-item[1], tie[item[0]]))  # type: ignore[index]
    return [(int(key), score) for key, score in scored[:top_k]]  # type: ignore[call-overload]


@settings(max_examples=150)
@given(documents, st.permutations(list(range(30))), st.sampled_from(WORDS), st.integers(1, 12), st.booleans())
def test_ranking_is_every_score_sorted_with_ties_in_tie_order(
    texts: list[str], keys: list[int], query: str, top_k: int, ties_by_key: bool
) -> None:
    keys = keys[: len(texts)]
    index = BM25Index(ties_by_key=ties_by_key)
    index.add(keys, texts)
    tie = {key: key if ties_by_key else slot for slot, key in enumerate(keys)}
    assert index.search(query, top_k=top_k) == _by_hand(index, query, top_k, tie)


def test_the_cut_among_many_equal_scores_takes_the_first_in_tie_order() -> None:
    keys = [(i * 37) % 101 for i in range(101)]  # every key once, in a scrambled insertion order
    for ties_by_key in (False, True):
        index = BM25Index(ties_by_key=ties_by_key)
        index.add(keys, ["lamp"] * len(keys))
        found = [key for key, _ in index.search("lamp", top_k=9)]
        assert found == (sorted(keys)[:9] if ties_by_key else keys[:9])


def test_the_default_tie_order_takes_keys_that_do_not_compare() -> None:
    index = BM25Index()
    index.add([3, "b", (1,)], ["lamp", "lamp", "lamp"])
    assert [key for key, _ in index.search("lamp", top_k=2)] == [3, "b"]
