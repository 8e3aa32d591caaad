"""Default plugin: the built-in rerankers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.hookspecs import hookimpl
from ragloom.rerankers.keyword import KeywordReranker, KeywordRerankerConfig
from ragloom.rerankers.llm import LLMReranker, LLMRerankerConfig

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _llm(config: LLMRerankerConfig, context: BuildContext) -> LLMReranker:
    """The pipeline's LLM scores each candidate 0-10 (falls back to retrieval order)."""
    from ragloom.llm import as_generate

    return LLMReranker(config, generate=as_generate(context.llm, what="the llm reranker"))


def _keyword(config: KeywordRerankerConfig, context: BuildContext) -> KeywordReranker:
    """Query-term coverage blended with the retrieval score (offline)."""
    return KeywordReranker(config)


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    register("llm", _llm, config=LLMRerankerConfig)
    register("keyword", _keyword, config=KeywordRerankerConfig)
