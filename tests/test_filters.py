"""The filter language: parsing, validation, and evaluation through a real pipeline."""

from __future__ import annotations

import pytest

from ragloom import Document, FilterError, Pipeline
from ragloom.filters import And, Condition, Or, parse_filter

RECORDS = [
    {"name": "a", "year": 2019, "lang": "en", "score": 0.5, "draft": True, "tags": ("public",)},
    {"name": "b", "year": 2021, "lang": "de", "score": 1.5, "draft": False, "tags": ("public", "legal")},
    {"name": "c", "year": 2023, "lang": "en", "tags": ()},
    {"name": "d", "year": "2020", "lang": "fr", "author": "Ana", "tags": ("legal",)},
]


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    pipeline = Pipeline.builder().embedder("hash", dim=32).chunker("fixed", size=200).build()
    for record in RECORDS:
        metadata = {k: v for k, v in record.items() if k != "tags"}
        document = Document.create(f"record {record['name']} about lamps", f"mem://{record['name']}", metadata=metadata, tags=record["tags"])
        pipeline.ingest_documents([document])
    return pipeline



def names(pipeline: Pipeline, spec: object) -> set[str]:
    return {r.metadata["name"] for r in pipeline.query("lamps", top_k=100, filter=spec)}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"lang": "en"}, {"a", "c"}),
        ({"lang": {"$eq": "en"}}, {"a", "c"}),
        ({"lang": {"$ne": "en"}}, {"b", "d"}),
        ({"year": {"$gt": 2019}}, {"b", "c"}),  # "2020" is a string: never compared with a number
        ({"year": {"$gte": 2021}}, {"b", "c"}),
        ({"year": {"$lt": 2021}}, {"a"}),
        ({"year": {"$lte": 2021}}, {"a", "b"}),
        ({"year": {"$gte": 2019, "$lt": 2023}}, {"a", "b"}),
        ({"score": {"$gt": 1}}, {"b"}),
        ({"lang": {"$in": ["de", "fr"]}}, {"b", "d"}),
        ({"lang": {"$nin": ["de", "fr"]}}, {"a", "c"}),
        ({"author": {"$exists": True}}, {"d"}),
        ({"author": {"$exists": False}}, {"a", "b", "c"}),
        ({"author": {"$ne": "Ana"}}, {"a", "b", "c"}),  # $ne matches a missing key
        ({"author": {"$nin": ["Ana"]}}, {"a", "b", "c"}),
        ({"draft": True}, {"a"}),
        ({"draft": 1}, set()),  # booleans are not numbers
        ({"$or": [{"lang": "de"}, {"year": 2023}]}, {"b", "c"}),
        ({"$and": [{"lang": "en"}, {"year": {"$gt": 2020}}]}, {"c"}),
        ({"lang": "en", "year": 2019}, {"a"}),
        ({"tags": "legal"}, {"b", "d"}),
        ({"tags": {"$in": ["public", "nope"]}}, {"a", "b"}),
        ({"tags": {"$nin": ["public"]}}, {"c", "d"}),
        ({"tags": {"$ne": "public"}}, {"c", "d"}),
        ({"tags": {"$exists": False}}, {"c"}),
        ({"source": "mem://b"}, {"b"}),
        ({"source": {"$in": ["mem://a", "mem://d"]}}, {"a", "d"}),
        ({"$or": [{"$and": [{"lang": "en"}, {"draft": True}]}, {"author": "Ana"}]}, {"a", "d"}),
    ],
)
def test_operator(pipeline: Pipeline, spec: object, expected: set[str]) -> None:
    assert names(pipeline, spec) == expected


def test_document_id_key(pipeline: Pipeline) -> None:
    target = Document.create("x", "mem://c").id
    assert names(pipeline, {"document_id": target}) == {"c"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"year": {"$between": [1, 2]}}, "unknown operator '$between'"),
        ({"$nor": [{"a": 1}]}, "unknown operator '$nor' at this level"),
        ({"$or": []}, "non-empty list"),
        ({"$and": {"a": 1}}, "non-empty list"),
        ({"lang": {"$in": []}}, "non-empty list"),
        ({"lang": {"$in": "en"}}, "non-empty list"),
        ({"lang": {"$in": [["en"]]}}, "strings, numbers or booleans"),
        ({"author": {"$exists": "yes"}}, "$exists takes true or false"),
        ({"year": {"$gt": True}}, "got a boolean"),
        ({"year": {"$gt": [1]}}, "takes a string, number or boolean"),
        ({"tags": {"$gt": "a"}}, "not defined for tags"),
        ({"meta": {"nested": 1}}, "nested metadata is not filterable"),
        ({"": 1}, "non-empty strings"),
        ({}, "empty filter"),
        ({"lang": {}}, "empty operator table"),
        ("lang = en", "a filter is a table"),
        ({"lang": None}, "takes a string, number or boolean"),
    ],
)
def test_malformed_filters_are_rejected_with_a_clear_message(spec: object, message: str) -> None:
    with pytest.raises(FilterError) as info:
        parse_filter(spec)
    assert message in str(info.value)


def test_malformed_filter_through_query(pipeline: Pipeline) -> None:
    with pytest.raises(FilterError, match=r"filter\.year: unknown operator"):
        pipeline.query("lamps", filter={"year": {"$like": "20%"}})


def test_parsed_tree_shape() -> None:
    tree = parse_filter({"a": 1, "$or": [{"b": {"$gt": 2}}, {"tags": "x"}]})
    assert tree == And((Condition("a", "$eq", 1), Or((Condition("b", "$gt", 2), Condition("tags", "$eq", "x")))))
    assert Condition("tags", "$eq", "x").reserved and not Condition("a", "$eq", 1).reserved
