"""Built-in components of core not covered elsewhere: hash embedder, Markdown frontmatter, similarity threshold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import ConfigError, Pipeline
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.loaders.markdown import MarkdownLoader, MarkdownLoaderConfig


class TestHashEmbedder:
    def test_deterministic_dimension_and_unit_length(self) -> None:
        texts = ["The lamp resets after ten seconds.", "Warranty: two years.", "", "the and of"]
        first = HashEmbedder(HashEmbedderConfig(dim=64)).embed_documents(texts)
        second = HashEmbedder(HashEmbedderConfig(dim=64)).embed_documents(texts)
        assert first.shape == (4, 64) and first.dtype == np.float32
        assert np.array_equal(first, second)  # no per-process hash salt
        norms = np.linalg.norm(first, axis=1)
        assert np.allclose(norms[:2], 1.0, atol=1e-6)
        assert norms[2] == 0 and norms[3] == 0  # nothing but stop words: a zero vector, not NaN

    def test_lexical_similarity_and_query_equals_document(self) -> None:
        embedder = HashEmbedder()
        base, paraphrase, other = embedder.embed_documents(
            ["factory reset of the lamp", "reset the lamp to factory settings", "shipping costs to Canada"]
        )
        assert base @ paraphrase > base @ other + 0.3
        assert np.array_equal(embedder.embed_query("factory reset of the lamp"), base)

    def test_batches_give_the_same_rows_as_single_texts(self) -> None:
        embedder = HashEmbedder(HashEmbedderConfig(dim=32))
        texts = [f"document {i} about lamp {i % 7}" for i in range(600)]  # crosses the internal 256-text slices
        batch = embedder.embed_documents(texts)
        for i in (0, 255, 256, 599):
            assert np.allclose(batch[i], embedder.embed_documents([texts[i]])[0], atol=1e-7)

    def test_options_change_model_id_and_vectors(self) -> None:
        plain = HashEmbedder(HashEmbedderConfig(stopwords="none"))
        default = HashEmbedder()
        assert plain.model_id != default.model_id
        assert not np.array_equal(plain.embed_query("what is the lamp"), default.embed_query("what is the lamp"))

    def test_invalid_options(self) -> None:
        with pytest.raises(ConfigError, match="'ngram_max'"):
            Pipeline.builder().embedder("hash", ngram_min=5, ngram_max=3)
        with pytest.raises(ConfigError, match="'dim' must be >= 8"):
            Pipeline.builder().embedder("hash", dim=4)


class TestMarkdownFrontmatter:
    def write(self, tmp_path: Path) -> Path:
        path = tmp_path / "page.md"
        path.write_text("---\ntitle: Setup\ncategory: support\nupdated: 2024-05-01\n---\n# Heading\n\nBody text.\n", encoding="utf-8")
        return path

    def test_stripped_by_default_keys_in_metadata(self, tmp_path: Path) -> None:
        (document,) = MarkdownLoader().load(str(self.write(tmp_path)))
        assert document.text == "# Heading\n\nBody text.\n"
        assert document.metadata["title"] == "Setup" and document.metadata["category"] == "support"
        assert document.metadata["updated"] == "2024-05-01"  # dates become ISO strings

    def test_kept_when_asked(self, tmp_path: Path) -> None:
        (document,) = MarkdownLoader(MarkdownLoaderConfig(strip_frontmatter=False)).load(str(self.write(tmp_path)))
        assert document.text.startswith("---\ntitle: Setup") and document.metadata["category"] == "support"

    def test_title_falls_back_to_the_first_heading(self, tmp_path: Path) -> None:
        path = tmp_path / "plain.md"
        path.write_text("Intro\n\n# Real Title\n\n## Sub\n", encoding="utf-8")
        (document,) = MarkdownLoader().load(str(path))
        assert document.metadata["title"] == "Real Title"


def test_similarity_threshold_from_config_and_per_query(corpus: Path) -> None:
    pipeline = Pipeline.builder().retriever("similarity", top_k=50, threshold=0.2).build()
    pipeline.ingest(corpus)
    configured = pipeline.query("factory reset")
    assert configured and all(hit.score >= 0.2 for hit in configured)
    stricter = pipeline.query("factory reset", threshold=0.35)
    assert all(hit.score >= 0.35 for hit in stricter) and len(stricter) < len(configured)
    loose = pipeline.query("factory reset", threshold=-1.0)
    assert len(loose) == 50  # the per-query value replaces the configured one
