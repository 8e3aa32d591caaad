"""The html loader and extract_html: block-aware text, metadata, charsets, selectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.errors import LoaderError
from ragloom.loaders import HtmlContent, HtmlLoader, HtmlLoaderConfig, extract_html


def test_fixture_page_text_and_metadata(fixtures: Path) -> None:
    [doc] = HtmlLoader().load(str(fixtures / "page.html"))
    assert "SHOULD-NOT-APPEAR" not in doc.text
    assert "tracking" not in doc.text and "color: red" not in doc.text
    assert "Caring for your Lumen Lamp" in doc.text  # inline <em> does not split the word
    assert "Wipe the shade with a dry cloth.\nNever use water on the base." in doc.text  # <br> is a line break
    assert "Nested note: unplug first.\n\nInlineJoined" in doc.text
    assert "Dust weekly\nCheck the cable monthly" in doc.text
    assert "Part\nInterval\nBulb\n2 years" in doc.text  # cells and rows are lines; &nbsp; is a space
    assert "Café & bistro mode <warm> ☀" in doc.text  # entities decoded
    assert doc.text.startswith("Home | Shop\n\nCaring")
    assert doc.text.endswith("© 2024 Lumen Inc.")
    assert doc.metadata == {
        "file_name": "page.html",
        "title": "Lumen Lamp – Care Guide",
        "description": "How to clean and store the Lumen Lamp.",
        "lang": "en-GB",
        "canonical_url": "/guides/care",
    }


def test_selector_keeps_only_matches(fixtures: Path) -> None:
    [doc] = HtmlLoader(HtmlLoaderConfig(selector="main")).load(str(fixtures / "page.html"))
    assert doc.text.startswith("Caring for your Lumen Lamp")
    assert "Home" not in doc.text and "Lumen Inc." not in doc.text


def test_extract_html_contract() -> None:
    content = extract_html(
        '<html lang="de"><head><title>T</title><meta property="og:description" content="D">'
        '<link rel="alternate canonical" href="page?a=1"></head><body><p>x</p></body></html>',
        base_url="https://example.org/docs/",
    )
    assert content == HtmlContent(
        text="x", title="T", description="D", lang="de", canonical_url="https://example.org/docs/page?a=1"
    )


def test_selector_matching_nothing_gives_empty_text() -> None:
    assert extract_html("<p>hello</p>", selector="article").text == ""


def test_nested_selector_matches_are_not_repeated() -> None:
    content = extract_html("<div class=a>one<div class=a>two</div></div><div class=a>three</div>", selector=".a")
    assert content.text == "one\n\ntwo\n\nthree"


def test_bad_selector_is_a_loader_error() -> None:
    with pytest.raises(LoaderError, match="invalid CSS selector"):
        extract_html("<p>x</p>", selector="p[")


def test_bad_selector_in_loader_names_the_file(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text("<p>x</p>")
    with pytest.raises(LoaderError) as info:
        list(HtmlLoader(HtmlLoaderConfig(selector="::nope(")).load(str(page)))
    assert info.value.source == str(page)


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>a<b>b</b>c</p>", "abc"),
        ("<p>one <i> two </i> three</p>", "one two three"),
        ("<p>one</p><p>two</p>", "one\n\ntwo"),
        ("<div>a<br>b<br/><br>c</div>", "a\nb\nc"),
        ("<ol><li>x</li><li>y</li></ol>", "x\ny"),
        ("<pre>  keep\n    indent</pre>", "keep\n    indent"),
        ("<p>spaces\n\t  collapse</p>", "spaces collapse"),
        ("<p hidden>gone</p><p>kept</p>", "kept"),
        ("a &lt;b&gt; &amp;amp; &quot;q&quot; &#233;", 'a <b> &amp; "q" é'),
        ("<div>" * 2000 + "deep" + "</div>" * 2000, "deep"),
        ("<p>" * 50_000 + "x", "x"),  # unclosed paragraphs close each other: not nesting
        ("", ""),
    ],
)
def test_block_aware_text(html: str, text: str) -> None:
    assert extract_html(html).text == text


def test_hostile_nesting_is_refused_fast(tmp_path: Path) -> None:
    page = tmp_path / "deep.html"
    page.write_text("<span>" * 1500 + "<div>" * 1500 + "x")
    with pytest.raises(LoaderError, match="nest deeper than 2048 levels") as info:
        list(HtmlLoader().load(str(page)))
    assert info.value.source == str(page)


def test_charset_from_meta(tmp_path: Path) -> None:
    page = tmp_path / "latin.html"
    page.write_bytes(
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head><body><p>Café € naïve</p></body></html>'.encode(
            "cp1252"
        )
    )
    [doc] = HtmlLoader().load(str(page))
    assert doc.text == "Café € naïve"


def test_charset_from_bom(tmp_path: Path) -> None:
    page = tmp_path / "utf16.html"
    page.write_bytes(b"\xff\xfe" + "<p>Größe Ω</p>".encode("utf-16-le"))
    [doc] = HtmlLoader().load(str(page))
    assert doc.text == "Größe Ω"


def test_charset_detected_without_declaration(tmp_path: Path) -> None:
    page = tmp_path / "detected.html"
    sentence = "Les élèves étudient à la bibliothèque près de l'église après le déjeuner. "
    page.write_bytes(f"<p>{sentence * 20}</p>".encode("latin-1"))
    [doc] = HtmlLoader().load(str(page))
    assert doc.text.startswith("Les élèves étudient")


def test_forced_encoding(tmp_path: Path) -> None:
    page = tmp_path / "koi8.html"
    page.write_bytes("<p>Привет</p>".encode("koi8-r"))
    [doc] = HtmlLoader(HtmlLoaderConfig(encoding="koi8-r")).load(str(page))
    assert doc.text == "Привет"


def test_limits(tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    page.write_text("<p>" + "word " * 2000 + "</p>")
    with pytest.raises(LoaderError, match="max_file_bytes"):
        list(HtmlLoader(HtmlLoaderConfig(max_file_bytes=1000)).load(str(page)))
    with pytest.raises(LoaderError, match="max_text_chars") as info:
        list(HtmlLoader(HtmlLoaderConfig(max_text_chars=500)).load(str(page)))
    assert info.value.source == str(page)
    [doc] = HtmlLoader(HtmlLoaderConfig(max_text_chars=10_000)).load(str(page))
    assert len(doc.text) == len("word " * 2000) - 1


@pytest.mark.parametrize(
    ("data", "declared", "text"),
    [
        ('<meta charset="iso-8859-1"><p>“quoted” café</p>'.encode("cp1252"), None, "“quoted” café"),  # latin-1 label means cp1252
        ('<?xml version="1.0" encoding="koi8-r"?><html><body><p>Привет</p></body></html>'.encode("koi8-r"), None, "Привет"),
        ('<meta charset="utf-16"><p>naïve</p>'.encode(), None, "naïve"),  # a UTF-16 label on ASCII bytes is ignored
        ("<p>Größe</p>".encode("cp1252"), "windows-1252", "Größe"),  # an HTTP charset wins over detection
        ("<p>Größe</p>".encode("cp1252"), "no-such-charset", None),
    ],
)
def test_decode_html_charsets(data: bytes, declared: str | None, text: str | None) -> None:
    from ragloom.loaders import decode_html

    decoded = decode_html(data, "page.html", declared=declared)
    if text is not None:
        assert extract_html(decoded).text == text
    else:
        assert isinstance(decoded, str)  # an unknown label falls back to UTF-8 / detection, never crashes
