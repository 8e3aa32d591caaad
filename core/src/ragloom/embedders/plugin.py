"""Default plugin: the built-in embedders."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.embedders.openai import OpenAIEmbedder, OpenAIEmbedderConfig
from ragloom.hookspecs import hookimpl

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _hash(config: HashEmbedderConfig, context: BuildContext) -> HashEmbedder:
    """Offline lexical feature-hashing embedder (the default)."""
    return HashEmbedder(config)


def _openai(config: OpenAIEmbedderConfig, context: BuildContext) -> OpenAIEmbedder:
    """OpenAI-compatible /v1/embeddings (OpenAI, Ollama, vLLM, LM Studio ...)."""
    return OpenAIEmbedder(config)


@hookimpl
def register_embedders(register):  # type: ignore[no-untyped-def]
    register("hash", _hash, config=HashEmbedderConfig)
    register("openai", _openai, config=OpenAIEmbedderConfig)
