"""Shared fixtures: isolated registries, a copy of the example corpus, counting embedders."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "examples" / "quickstart" / "corpus"


class CountingEmbedder(HashEmbedder):
    """The real hash embedder, counting how many texts it embeds."""

    def __init__(self, dim: int = 512):
        super().__init__(HashEmbedderConfig(dim=dim))
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the quickstart corpus."""
    target = tmp_path / "corpus"
    shutil.copytree(CORPUS, target)
    return target


@pytest.fixture
def counting_embedder() -> CountingEmbedder:
    return CountingEmbedder()
