"""The text loader: UTF-8 with or without BOM, other encodings detected or a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.errors import LoaderError
from ragloom.loaders import TextLoader, TextLoaderConfig

SENTENCE = "Die Straße führt über die Brücke zur Müllerstraße, wo Jürgen Öl für den Kühlschrank kauft. "


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf"])
def test_utf8_with_and_without_bom(tmp_path: Path, prefix: bytes) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(prefix + "Grüße 😀".encode())
    [doc] = TextLoader().load(str(path))
    assert doc.text == "Grüße 😀"
    assert doc.metadata == {"file_name": "a.txt"}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_utf16_and_utf32_with_bom(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes("Привет, мир".encode(encoding))
    [doc] = TextLoader().load(str(path))
    assert doc.text == "Привет, мир"


def test_legacy_encoding_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes((SENTENCE * 10).encode("latin-1"))
    [doc] = TextLoader().load(str(path))
    assert doc.text == SENTENCE * 10


def test_detection_off_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(SENTENCE.encode("latin-1"))
    with pytest.raises(LoaderError, match=r"\(byte 8\): not valid UTF-8") as info:
        list(TextLoader(TextLoaderConfig(detect_encoding=False)).load(str(path)))
    assert info.value.source == str(path)


def test_binary_data_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\xff\xfe\x00")
    with pytest.raises(LoaderError, match="binary"):
        list(TextLoader().load(str(path)))


def test_forced_encoding(tmp_path: Path) -> None:
    path = tmp_path / "cyr.txt"
    path.write_bytes("Съешь же ещё этих мягких французских булок".encode("cp1251"))
    [doc] = TextLoader(TextLoaderConfig(encoding="cp1251")).load(str(path))
    assert doc.text.startswith("Съешь")
    with pytest.raises(LoaderError, match="unknown encoding"):
        list(TextLoader(TextLoaderConfig(encoding="no-such-codec")).load(str(path)))
    with pytest.raises(LoaderError, match=r"\(byte 0\): not valid utf-8"):
        list(TextLoader(TextLoaderConfig(encoding="utf-8")).load(str(path)))


def test_limits(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 5000)
    with pytest.raises(LoaderError, match="5000 bytes, over the limit of 1000"):
        list(TextLoader(TextLoaderConfig(max_file_bytes=1000)).load(str(path)))
    with pytest.raises(LoaderError, match="max_text_chars"):
        list(TextLoader(TextLoaderConfig(max_text_chars=4999)).load(str(path)))
    assert len(next(iter(TextLoader(TextLoaderConfig(max_text_chars=5000)).load(str(path)))).text) == 5000
