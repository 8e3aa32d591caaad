"""CSV and JSONL stream: memory stays bounded by a row, not by the file (measured with tracemalloc)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import pytest

from ragloom.loaders import CsvLoader, CsvLoaderConfig, JsonlLoader, JsonlLoaderConfig
from ragloom.types import Document

TARGET_BYTES = 50 * 1024 * 1024
ROW_TEXT = ("The Lumen Lamp glows warm or cold, dims in five steps and runs ten hours. " * 27)[:2000]
PEAK_LIMIT = 8 * 1024 * 1024


def write_big(path: Path, header: str, line: str) -> int:
    rows = TARGET_BYTES // len(line)
    block = line * 1000
    with path.open("w", encoding="utf-8") as handle:
        handle.write(header)
        for _ in range(rows // 1000):
            handle.write(block)
    return (rows // 1000) * 1000


def peak_while_consuming(documents: Iterable[Document]) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = 0
        for count, _doc in enumerate(documents, start=1):  # noqa: B007 - documents are dropped one by one
            pass
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_csv_streams(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    rows = write_big(path, "id,category,body\n", f'7,lamps,"{ROW_TEXT}\nsecond line"\n')
    assert path.stat().st_size > 45 * 1024 * 1024
    loader = CsvLoader(CsvLoaderConfig(content_columns=("body",), metadata_columns=("category",)))
    count, peak = peak_while_consuming(loader.load(str(path)))
    assert count == rows
    assert peak < PEAK_LIMIT, f"peak {peak} bytes while streaming a {path.stat().st_size}-byte CSV"


@pytest.mark.slow
def test_jsonl_streams(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    rows = write_big(path, "", json.dumps({"text": ROW_TEXT, "n": 1}) + "\n")
    loader = JsonlLoader(JsonlLoaderConfig(content_field="text", metadata_fields=("n",)))
    count, peak = peak_while_consuming(loader.load(str(path)))
    assert count == rows
    assert peak < PEAK_LIMIT, f"peak {peak} bytes while streaming a {path.stat().st_size}-byte JSONL file"


def test_streaming_loaders_accept_files_over_200_mb_by_default() -> None:
    assert CsvLoaderConfig().max_file_bytes >= 4 * 1024**3
    assert JsonlLoaderConfig().max_file_bytes >= 4 * 1024**3
