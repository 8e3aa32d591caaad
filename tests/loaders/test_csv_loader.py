"""The csv loader: columns, quoted newlines, BOM, sniffing, header-less files, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.errors import LoaderError
from ragloom.loaders import CsvLoader, CsvLoaderConfig
from ragloom.types import make_document_id


def test_bom_quoted_newlines_and_columns(fixtures: Path) -> None:
    path = str(fixtures / "products.csv")
    config = CsvLoaderConfig(content_columns=("body",), metadata_columns=("title", "category"), id_column="id")
    docs = list(CsvLoader(config).load(path))
    assert [d.text for d in docs] == [
        "Plug the lamp in.\r\nWait two hours.",
        'Hold the button "twice" for warm light.',
        "Fold the arm before packing.",
    ]
    assert docs[0].metadata == {"file_name": "products.csv", "row": 1, "line": 2, "title": "Charging", "category": "power", "id": "1"}
    assert [d.metadata["row"] for d in docs] == [1, 2, 3]  # the blank line is not a row
    assert docs[1].metadata["title"] == "Colour, warm"
    assert docs[2].id == make_document_id(path, "id:3")


def test_default_content_is_every_other_column(fixtures: Path) -> None:
    docs = list(CsvLoader(CsvLoaderConfig(metadata_columns=("id",))).load(str(fixtures / "products.csv")))
    assert docs[2].text == "title: Travel\nbody: Fold the arm before packing.\ncategory: storage"
    assert docs[2].id == make_document_id(str(fixtures / "products.csv"), 3)


def test_tsv_uses_tab(fixtures: Path) -> None:
    docs = list(CsvLoader(CsvLoaderConfig(content_columns=("Lamp", "Interval"))).load(str(fixtures / "parts.tsv")))
    assert [d.text for d in docs] == ["Lamp: Bulb\nInterval: 2 years", "Lamp: Cable\nInterval: 6 months"]


@pytest.mark.parametrize("delimiter", [";", "|", "\t", ","])
def test_delimiter_is_sniffed(tmp_path: Path, delimiter: str) -> None:
    path = tmp_path / "data.csv"
    rows = [["name", "note", "price"], ["lamp", "warm, bright", "30"], ["cable", "short", "5"]]
    path.write_text("\n".join(delimiter.join(f'"{v}"' if "," in v else v for v in row) for row in rows) + "\n")
    docs = list(CsvLoader(CsvLoaderConfig(content_columns=("note",), metadata_columns=("price",))).load(str(path)))
    assert [(d.text, d.metadata["price"]) for d in docs] == [("warm, bright", "30"), ("short", "5")]


def test_explicit_delimiter_and_quotechar(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a;b\n'x;y';z\n")
    [doc] = CsvLoader(CsvLoaderConfig(delimiter=";", quotechar="'", content_columns=("a",))).load(str(path))
    assert doc.text == "x;y"


def test_headerless_files(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("first row,1\nsecond row,2\n")
    docs = list(
        CsvLoader(CsvLoaderConfig(has_header=False, content_columns=("column_1",), metadata_columns=("column_2",))).load(
            str(path)
        )
    )
    assert [(d.text, d.metadata["column_2"], d.metadata["row"]) for d in docs] == [("first row", "1", 1), ("second row", "2", 2)]
    named = CsvLoaderConfig(has_header=False, column_names=("text", "n"), content_columns=("text",), metadata_columns=("n",))
    assert [d.metadata["n"] for d in CsvLoader(named).load(str(path))] == ["1", "2"]


def test_empty_rows_skipped_or_kept(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text("text,n\nhello,1\n,2\nbye,3\n")
    assert [
        d.metadata["n"] for d in CsvLoader(CsvLoaderConfig(content_columns=("text",), metadata_columns=("n",))).load(str(path))
    ] == ["1", "3"]
    keep = CsvLoaderConfig(content_columns=("text",), metadata_columns=("n",), skip_empty_rows=False)
    assert [d.text for d in CsvLoader(keep).load(str(path))] == ["hello", "", "bye"]


def test_non_utf8_is_detected_or_forced(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(
        ("name,desc\n" + "".join(f"lampe {i},Lumière très élégante pour le salon numéro {i}\n" for i in range(30))).encode(
            "cp1252"
        )
    )
    docs = list(CsvLoader(CsvLoaderConfig(content_columns=("desc",))).load(str(path)))
    assert len(docs) == 30
    # detection may pick any Latin code page: the letters they share must come out right
    assert "élégante pour le salon numéro 0" in docs[0].text and "\ufffd" not in docs[0].text
    forced = list(CsvLoader(CsvLoaderConfig(content_columns=("desc",), encoding="latin-1")).load(str(path)))
    assert forced[29].text.endswith("numéro 29")


@pytest.mark.parametrize(
    ("content", "config", "match"),
    [
        (
            "a,b\n1,2\n",
            CsvLoaderConfig(content_columns=("c",)),
            r"\(header\): content_columns: no column 'c'; the columns are \['a', 'b'\]",
        ),
        ("a,b\n1,2\n", CsvLoaderConfig(metadata_columns=("z",)), "metadata_columns: no column 'z'"),
        ("a,b\n1,2\n1,2,3\n", CsvLoaderConfig(delimiter=","), r"\(row 2\): row has 3 values but there are 2 columns"),
        ("id,t\n1,x\n1,y\n", CsvLoaderConfig(id_column="id", content_columns=("t",)), r"\(row 2\): duplicate id '1'"),
        ("id,t\n,x\n", CsvLoaderConfig(id_column="id", content_columns=("t",)), r"\(row 1\): empty id"),
        ("t\n" + "x" * 300 + "\n", CsvLoaderConfig(max_text_chars=100), r"\(row 1\).*max_text_chars"),
        ('t\n"' + "x" * 200_000 + '"\n', CsvLoaderConfig(max_text_chars=150_000), "max_text_chars"),
    ],
)
def test_errors_name_file_and_row(tmp_path: Path, content: str, config: CsvLoaderConfig, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(LoaderError, match=match) as info:
        list(CsvLoader(config).load(str(path)))
    assert info.value.source == str(path)


def test_undecodable_later_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"t\n" + b"fine\n" * 20_000 + b"bad \xff\xfe\n")
    with pytest.raises(LoaderError, match="not valid utf-8"):
        list(CsvLoader().load(str(path)))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="single character"):
        CsvLoaderConfig(delimiter=";;")


def test_bom_with_forced_utf8_does_not_rename_the_first_column(fixtures: Path) -> None:
    config = CsvLoaderConfig(encoding="utf-8", content_columns=("body",), metadata_columns=("id",))
    docs = list(CsvLoader(config).load(str(fixtures / "products.csv")))
    assert [d.metadata["id"] for d in docs] == ["1", "2", "3"]
