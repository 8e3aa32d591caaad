"""The component protocols in one place: what the pipeline and every factory are typed with.

Each protocol lives beside its stage (``ragloom/<stage>s/base.py``) with its
method-by-method contract; this module gathers them and adds :class:`LLM`.
Components never inherit from them: any object with the methods fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, Union, runtime_checkable

from ragloom.chunkers.base import Chunker
from ragloom.embedders.base import Embedder
from ragloom.loaders.base import Loader
from ragloom.rerankers.base import Reranker
from ragloom.retrievers.base import Retriever
from ragloom.stores.base import Store

__all__ = ["LLM", "Chunker", "Embedder", "GenerateFn", "LLMLike", "Loader", "Reranker", "Retriever", "Store"]


@runtime_checkable
class LLM(Protocol):
    """A text generator for the LLM-backed parts (query expansion, LLM reranking)."""

    def generate(self, prompt: str) -> str:
        """The model's answer to ``prompt``."""
        ...


#: A bare ``prompt -> str`` function also stands in for an LLM (see :func:`ragloom.llm.as_generate`).
GenerateFn = Callable[[str], str]
LLMLike = Union[LLM, GenerateFn]
