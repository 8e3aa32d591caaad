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


KNOWN = "known: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"year": {"$between": [1, 2]}}, f"filter.year: unknown operator '$between'; {KNOWN}"),
        ({"meta": {"nested": 1}}, f"filter.meta: unknown operator 'nested' (nested metadata is not filterable; use a flat key); {KNOWN}"),
        ({"x": {3: 1}}, f"filter.x: unknown operator 3; {KNOWN}"),
        ({"$nor": [{"a": 1}]}, "filter: unknown operator '$nor' at this level; use $and or $or, or put it under a key"),
        ({"$or": []}, "filter.$or: takes a non-empty list of filters"),
        ({"$and": {"a": 1}}, "filter.$and: takes a non-empty list of filters"),
        ({"lang": {"$in": []}}, "filter.lang: $in takes a non-empty list of values, got []"),
        ({"lang": {"$nin": "en"}}, "filter.lang: $nin takes a non-empty list of values, got 'en'"),
        ({"lang": {"$in": [["en"]]}}, "filter.lang: $in values must be strings, numbers or booleans, got ['en']"),
        ({"lang": {"$in": ["en", float("nan")]}}, "filter.lang: $in values must be strings, numbers or booleans, got nan"),
        ({"lang": float("nan")}, "filter.lang: $eq takes a string, number or boolean, got nan"),
        ({"author": {"$exists": "yes"}}, "filter.author: $exists takes true or false, got 'yes'"),
        ({"author": {"$exists": 1}}, "filter.author: $exists takes true or false, got 1"),
        ({"year": {"$gt": True}}, "filter.year: $gt takes a number or string, got a boolean"),
        ({"year": {"$lte": [1]}}, "filter.year: $lte takes a string, number or boolean, got [1]"),
        ({"tags": {"$gt": "a"}}, "filter.tags: $gt is not defined for tags"),
        ({"tags": {"$lte": "a"}}, "filter.tags: $lte is not defined for tags"),
        ({"": 1}, "filter: filter keys must be non-empty strings, got ''"),
        ({"  ": 1}, "filter: filter keys must be non-empty strings, got '  '"),
        ({5: 1}, "filter: filter keys must be non-empty strings, got 5"),
        ({}, "filter: empty filter"),
        ({"lang": {}}, "filter.lang: empty operator table"),
        ("lang = en", "filter: a filter is a table / dict, got 'lang = en'"),
        ({"lang": None}, "filter.lang: $eq takes a string, number or boolean, got None"),
        ({"$or": [{"a": 1}, "x"]}, "filter.$or[1]: a filter is a table / dict, got 'x'"),
        ({"$and": [{"$or": [{"k": {"$ne": {}}}]}]}, "filter.$and[0].$or[0].k: $ne takes a string, number or boolean, got {}"),
    ],
)
def test_every_malformed_filter_is_refused_naming_where_and_why(spec: object, message: str) -> None:
    with pytest.raises(FilterError) as info:
        parse_filter(spec)
    assert str(info.value) == message


def test_filters_nest_32_levels_deep_and_no_deeper() -> None:
    from ragloom.filters import MAX_DEPTH

    def nested(levels: int) -> dict:
        spec: dict = {"a": 1}
        for _ in range(levels):
            spec = {"$or": [spec]}
        return spec

    assert MAX_DEPTH == 32
    assert parse_filter(nested(32)) is not None
    with pytest.raises(FilterError) as info:
        parse_filter(nested(33))
    assert str(info.value) == "filter: nested deeper than 32 levels"


def test_parse_combine_walk_and_predicate() -> None:
    from ragloom.filters import FilterVisitor, combine, compile_predicate, walk

    tree = parse_filter({"a": 1, "$or": [{"b": {"$gt": 2, "$lt": 5}}, {"tags": "x"}]})
    assert parse_filter(tree) is tree and parse_filter(None) is None
    assert parse_filter({"b": {"$gt": 2, "$lt": 5}}) == And((Condition("b", "$gt", 2), Condition("b", "$lt", 5)))
    assert parse_filter({"$and": [{"a": 1}]}) == And((Condition("a", "$eq", 1),))
    assert parse_filter({"$or": [{"a": 1}, {"b": 2}]}) == Or((Condition("a", "$eq", 1), Condition("b", "$eq", 2)))
    assert parse_filter({"l": {"$in": ["x", "y"]}}) == Condition("l", "$in", ("x", "y"))
    assert [(c.key, c.op) for c in walk(tree)] == [("a", "$eq"), ("b", "$gt"), ("b", "$lt"), ("tags", "$eq")]
    assert list(walk(None)) == []
    with pytest.raises(FilterError, match=r"^not a parsed filter: \{'a': 1\}$"):
        list(walk({"a": 1}))  # type: ignore[arg-type]
    assert combine(None, None) is None
    assert combine({"a": 1}, None) == Condition("a", "$eq", 1)
    assert combine({"a": 1}, {"b": 2}) == And((Condition("a", "$eq", 1), Condition("b", "$eq", 2)))
    predicate = compile_predicate(tree)
    assert predicate({"a": 1, "b": 3}, "/s", "d", ())
    assert predicate({"a": 1}, "/s", "d", ("x",))
    assert not predicate({"a": 1, "b": 5}, "/s", "d", ("y",))
    assert not predicate({"a": 2, "b": 3}, "/s", "d", ("x",))
    assert compile_predicate(None)({}, "/s", "d", ())

    class Text(FilterVisitor[str]):
        def visit_condition(self, node: Condition) -> str:
            return f"{node.key}{node.op}{node.value}"

        def visit_and(self, node: And, items: object) -> str:
            assert len(node.items) == len(items)  # type: ignore[arg-type]
            return "(" + " & ".join(items) + ")"  # type: ignore[arg-type]

        def visit_or(self, node: Or, items: object) -> str:
            assert len(node.items) == len(items)  # type: ignore[arg-type]
            return "(" + " | ".join(items) + ")"  # type: ignore[arg-type]

    assert Text().visit(tree) == "(a$eq1 & ((b$gt2 & b$lt5) | tags$eqx))"  # type: ignore[arg-type]
    with pytest.raises(FilterError, match=r"^not a parsed filter: \{'a': 1\}$"):
        Text().visit({"a": 1})  # type: ignore[arg-type]
    for method, arguments in (("visit_condition", (Condition("a", "$eq", 1),)), ("visit_and", (tree, [])), ("visit_or", (tree, []))):
        with pytest.raises(NotImplementedError):
            getattr(FilterVisitor(), method)(*arguments)


@pytest.mark.parametrize(
    ("spec", "record", "expected"),
    [
        ({"n": {"$gte": 2}}, {"n": 2}, True),
        ({"n": {"$gt": 2}}, {"n": 2}, False),
        ({"n": {"$lte": 2}}, {"n": 2}, True),
        ({"n": {"$lt": 2}}, {"n": 2}, False),
        ({"n": {"$lte": 2}}, {"n": 3}, False),
        ({"n": {"$lt": 3}}, {"n": 2.5}, True),
        ({"n": {"$gt": "b"}}, {"n": "c"}, True),
        ({"n": {"$gt": 1}}, {"n": "2"}, False),  # a string is never compared with a number
        ({"n": {"$lt": "z"}}, {"n": 1}, False),
        ({"n": {"$gt": 0}}, {"n": True}, False),  # booleans are not numbers
        ({"n": {"$lt": 2}}, {"n": [1]}, False),
        ({"n": {"$lt": 2}}, {"n": None}, False),
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": 1}, {"n": True}, False),
        ({"n": True}, {"n": 1}, False),
        ({"n": "1"}, {"n": 1}, False),
        ({"n": {"$ne": 1}}, {"n": 1.0}, False),
        ({"n": {"$in": [1, "x"]}}, {"n": 1.0}, True),
        ({"n": {"$nin": [1, "x"]}}, {"n": 1.0}, False),
        ({"n": {"$nin": [1, "x"]}}, {}, True),
        ({"n": {"$in": [1, "x"]}}, {}, False),
        ({"n": {"$ne": 1}}, {}, True),
        ({"n": {"$gt": 1}}, {}, False),
        ({"n": {"$exists": True}}, {"n": None}, False),
        ({"n": {"$exists": False}}, {"n": None}, True),
        ({"n": {"$exists": True}}, {"n": 0}, True),
        ({"tags": {"$exists": True}}, {}, False),
        ({"source": {"$gte": "/s"}}, {}, True),
        ({"document_id": {"$ne": "d"}}, {}, False),
        # the reserved keys keep their record's values inside $and / $or
        ({"$and": [{"source": "/s"}, {"document_id": "d"}]}, {}, True),
        ({"$and": [{"source": {"$gte": "/s"}}, {"n": {"$ne": 1}}]}, {}, True),
        ({"$and": [{"document_id": {"$in": ["d", "e"]}}, {"n": {"$ne": 1}}]}, {}, True),
        ({"$or": [{"source": "/s"}, {"n": 1}]}, {}, True),
        ({"$or": [{"document_id": "d"}, {"n": 1}]}, {}, True),
        ({"$or": [{"source": {"$ne": "/s"}}, {"document_id": {"$ne": "d"}}]}, {}, False),
        ({"$and": [{"tags": {"$exists": False}}, {"source": {"$exists": True}}]}, {}, True),
    ],
)
def test_each_comparison_on_one_record(spec: dict, record: dict, expected: bool) -> None:
    from ragloom.filters import matches

    assert matches(parse_filter(spec), metadata=record, source="/s", document_id="d", tags=()) is expected
