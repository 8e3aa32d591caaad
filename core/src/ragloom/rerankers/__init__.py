"""Rerankers: the protocol and the built-ins (llm, keyword)."""

from ragloom.rerankers.base import Reranker, reranked, resolve_top_n
from ragloom.rerankers.keyword import KeywordReranker, KeywordRerankerConfig
from ragloom.rerankers.llm import LLMReranker, LLMRerankerConfig, parse_scores

__all__ = [
    "KeywordReranker",
    "KeywordRerankerConfig",
    "LLMReranker",
    "LLMRerankerConfig",
    "Reranker",
    "parse_scores",
    "reranked",
    "resolve_top_n",
]
