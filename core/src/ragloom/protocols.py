"""The component protocols in one place: what the pipeline and every factory are typed with.

Each protocol lives beside its stage (``ragloom/<stage>s/base.py``) with its
method-by-method contract; this module gathers them and adds :class:`LLM`.
Components never inherit from them: any object with the methods fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

from ragloom.chunkers.base import Chunker
from ragloom.embedders.base import Embedder
from ragloom.loaders.base import Loader
from ragloom.rerankers.base import Reranker
from ragloom.retrievers.base import Retriever
from ragloom.stores.base import Store
from ragloom.types import IngestResult, IngestTarget

if TYPE_CHECKING:  # the pipeline is above this layer: a type only
    from ragloom.pipeline import Pipeline, Progress

__all__ = ["LLM", "Chunker", "Embedder", "Executor", "GenerateFn", "LLMLike", "Loader", "Reranker", "Retriever", "Store"]


@runtime_checkable
class LLM(Protocol):
    """A text generator for the LLM-backed parts (query expansion, LLM reranking)."""

    def generate(self, prompt: str) -> str:
        """The model's answer to ``prompt``."""
        ...


#: A bare ``prompt -> str`` function also stands in for an LLM (see :func:`ragloom.llm.as_generate`).
GenerateFn = Callable[[str], str]
LLMLike = Union[LLM, GenerateFn]


@runtime_checkable
class Executor(Protocol):
    """Runs ``Pipeline.ingest`` elsewhere (``[ingest] executor``), with the same semantics and result."""

    def ingest(self, pipeline: Pipeline, targets: Sequence[IngestTarget], *, progress: Callable[[Progress], Any] | None = None) -> IngestResult:
        """Ingest ``targets`` into ``pipeline.store`` (namespace ``pipeline.namespace``) and return the totals."""
        ...
