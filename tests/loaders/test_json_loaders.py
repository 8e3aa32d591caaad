"""The json and jsonl loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.errors import LoaderError
from ragloom.loaders import JsonlLoader, JsonlLoaderConfig, JsonLoader, JsonLoaderConfig
from ragloom.types import make_document_id


def test_items_at_a_path_with_fields(fixtures: Path) -> None:
    path = str(fixtures / "faq.json")
    config = JsonLoaderConfig(
        items_path="data.entries", content_field="answer.text", id_field="slug", metadata_fields=("question", "topic", "rank")
    )
    docs = list(JsonLoader(config).load(path))
    assert [d.text for d in docs] == ["About two hours.", "Hold the button twice.", "Yes, the battery is under 100 Wh."]
    assert docs[0].metadata == {
        "file_name": "faq.json",
        "item": 0,
        "id": "charge",
        "question": "How long does charging take?",
        "topic": "power",
        "rank": 1,
    }
    assert docs[1].id == make_document_id(path, "id:warm")
    assert {d.source for d in docs} == {path}


def test_top_level_array_ids_from_index(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps(["first", {"a": 1}, ["x", "y"], 7, None]))
    docs = list(JsonLoader().load(str(path)))
    assert [d.text for d in docs] == ["first", '{\n  "a": 1\n}', "x\ny", "7", ""]
    assert [d.metadata["item"] for d in docs] == [0, 1, 2, 3, 4]
    assert [d.id for d in docs] == [make_document_id(str(path), i) for i in range(5)]


def test_single_object_is_one_document(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"body": {"text": "Hello"}, "lang": "en", "tags": ["a", "b"]}))
    [doc] = JsonLoader(JsonLoaderConfig(content_field="body.text", metadata_fields=("lang", "tags", "missing"))).load(str(path))
    assert doc.text == "Hello"
    assert doc.metadata == {"file_name": "one.json", "lang": "en", "tags": ["a", "b"]}
    assert doc.id == make_document_id(str(path))


def test_list_index_in_path(tmp_path: Path) -> None:
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"pages": [{"blocks": ["a", "b"]}, {"blocks": ["c"]}]}))
    docs = list(JsonLoader(JsonLoaderConfig(items_path="pages", content_field="blocks.0")).load(str(path)))
    assert [d.text for d in docs] == ["a", "c"]


@pytest.mark.parametrize(
    ("content", "config", "match"),
    [
        ('{"a": 1,}', JsonLoaderConfig(), r"\(line 1 column 9\): invalid JSON"),
        ('{"a": []}', JsonLoaderConfig(items_path="b"), "items_path 'b' must lead to an array, found nothing"),
        ('{"a": {}}', JsonLoaderConfig(items_path="a"), "found dict"),
        ('[{"t": "x"}, {"u": "y"}]', JsonLoaderConfig(content_field="t"), r"\(item 1\).*content field 't' is missing"),
        ('[{"k": 1}, {"k": 1}]', JsonLoaderConfig(id_field="k"), r"\(item 1\).*duplicate id 1"),
        ('[{"k": [1]}]', JsonLoaderConfig(id_field="k"), "not a scalar"),
        ("[" * 100_000 + "]" * 100_000, JsonLoaderConfig(), "nested too deeply"),
    ],
)
def test_json_errors_name_the_file(tmp_path: Path, content: str, config: JsonLoaderConfig, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(LoaderError, match=match) as info:
        list(JsonLoader(config).load(str(path)))
    assert info.value.source == str(path)


def test_config_rejects_bad_paths() -> None:
    with pytest.raises(ValueError, match="dotted path"):
        JsonLoaderConfig(content_field="a..b")


def test_jsonl_lines_blank_lines_and_metadata(fixtures: Path) -> None:
    path = str(fixtures / "reviews.jsonl")
    docs = list(JsonlLoader(JsonlLoaderConfig(content_field="text", metadata_fields=("stars",))).load(path))
    assert [d.text for d in docs] == ["The lamp arrived quickly.", "Warm light is cosy.", "The cable is short."]
    assert [d.metadata["line"] for d in docs] == [1, 3, 5]
    assert [d.metadata["stars"] for d in docs] == [5, 4, 2]
    assert docs[2].id == make_document_id(path, 5)


def test_jsonl_id_field_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "r.ndjson"
    path.write_bytes(b'\xef\xbb\xbf{"id": 7, "t": "a"}\r\n{"id": 8, "t": "b"}')
    docs = list(JsonlLoader(JsonlLoaderConfig(content_field="t", id_field="id")).load(str(path)))
    assert [(d.text, d.metadata["id"], d.metadata["line"]) for d in docs] == [("a", 7, 1), ("b", 8, 2)]
    assert docs[0].id == make_document_id(str(path), "id:7")


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"t": "ok"}\n\n{"t": broken}\n{"t": "never"}\n')
    loaded = []
    with pytest.raises(LoaderError) as info:
        for doc in JsonlLoader().load(str(path)):
            loaded.append(doc)
    assert info.value.source == str(path)
    assert info.value.position == "line 3"
    assert f"{path} (line 3): invalid JSON" in str(info.value)
    assert len(loaded) == 1  # streamed: the good line came out before the bad one was read


def test_jsonl_line_limit_and_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text('"short"\n"' + "x" * 500 + '"\n')
    with pytest.raises(LoaderError, match=r"\(line 2\).*max_line_bytes"):
        list(JsonlLoader(JsonlLoaderConfig(max_line_bytes=100)).load(str(path)))
    path.write_bytes(b'"ok"\n"\xff\xfe"\n')
    with pytest.raises(LoaderError, match=r"\(line 2\): not valid UTF-8"):
        list(JsonlLoader().load(str(path)))


def test_jsonl_file_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('"line"\n' * 100)
    with pytest.raises(LoaderError, match="max_file_bytes"):
        list(JsonlLoader(JsonlLoaderConfig(max_file_bytes=100)).load(str(path)))
