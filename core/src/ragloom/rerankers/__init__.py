"""Rerankers: the protocol."""

from ragloom.rerankers.base import Reranker

__all__ = ["Reranker"]
