"""Shared fixtures: a copy of the example corpus, counting embedders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import CountingEmbedder

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "examples" / "quickstart" / "corpus"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the quickstart corpus."""
    target = tmp_path / "corpus"
    shutil.copytree(CORPUS, target)
    return target


@pytest.fixture
def counting_embedder() -> CountingEmbedder:
    return CountingEmbedder()
