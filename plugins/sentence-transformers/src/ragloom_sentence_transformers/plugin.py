"""The entry point: registers the ``sentence-transformers`` embedder and the ``cross-encoder`` reranker."""

from __future__ import annotations

from ragloom.plugin import BuildContext, hookimpl
from ragloom_sentence_transformers.cross_encoder import CrossEncoderConfig, CrossEncoderReranker, build_cross_encoder
from ragloom_sentence_transformers.embedder import SentenceTransformersConfig, SentenceTransformersEmbedder, build_embedder


def _sentence_transformers(config: SentenceTransformersConfig, context: BuildContext) -> SentenceTransformersEmbedder:
    """Local sentence-transformers model (name or path), offline unless allow_download."""
    return build_embedder(config, context)


def _cross_encoder(config: CrossEncoderConfig, context: BuildContext) -> CrossEncoderReranker:
    """Local cross-encoder model scoring (query, passage) pairs."""
    return build_cross_encoder(config, context)


@hookimpl
def register_embedders(register):  # type: ignore[no-untyped-def]
    register("sentence-transformers", _sentence_transformers, config=SentenceTransformersConfig)


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    register("cross-encoder", _cross_encoder, config=CrossEncoderConfig)
