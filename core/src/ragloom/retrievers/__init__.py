"""Retrievers: the protocol and the built-in ``similarity`` retriever."""

from ragloom.retrievers.base import Retriever
from ragloom.retrievers.similarity import SimilarityConfig, SimilarityRetriever

__all__ = ["Retriever", "SimilarityConfig", "SimilarityRetriever"]
