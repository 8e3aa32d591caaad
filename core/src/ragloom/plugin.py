"""Everything a plugin needs, in one public module.

Bundled plugins (duckdb, web, cohere, sentence-transformers) and third-party
ones import only ``ragloom``, ``ragloom.plugin`` and ``ragloom.testing``
(:data:`PUBLIC_MODULES`); every other module of the ``ragloom`` package is
private and may change without notice. What is here, by job:

- **hooks**: :data:`hookimpl`, :class:`BuildContext` (what a factory gets);
- **protocols** (the types at every seam): :class:`Loader`, :class:`SourceRouter`,
  :class:`Chunker`, :class:`Embedder`, :class:`Store`, :class:`KeywordSearchStore`,
  :class:`VectorStore`, :class:`Retriever`, :class:`Reranker`, :class:`LLM`;
- **stores' write protocol**: :class:`WriteSession`, :class:`SourceStage`, :class:`SourceState`;
- **data**: :class:`Document`, :class:`Chunk`, :class:`Result`,
  the errors, :class:`Secret` (a reference to an environment variable);
- **HTTP**: :class:`HTTPOptions` (the one options class: ``base_url``,
  ``api_key``, ``timeout``, ``max_retries``, ``backoff``), :class:`JSONClient`,
  :func:`post_json`, :func:`parse_retry_after`, :func:`check_http_url`; for the async path
  (``aingest``/``aquery`` run the pipeline in worker threads): :func:`bridge` (run a
  coroutine on the caller's event loop from such a worker) and :class:`AsyncClients` (one
  ``httpx.AsyncClient`` per event loop);
- **loaders**: :func:`decode_text`, :func:`bom_encoding`, :func:`check_text_chars`,
  :data:`DEFAULT_MAX_TEXT_CHARS`, :func:`file_metadata`, and HTML:
  :func:`decode_html`, :func:`extract_html`, :func:`html_metadata`, :class:`HtmlContent`;
- **chunkers**: :func:`spans_to_chunks`, :func:`fingerprint_of`;
- **embedders**: :func:`batched`, :func:`embed_in_batches`, :func:`check_embeddings`;
- **stores**: :data:`KEYWORD_SEARCH`, :data:`VECTORS`, :data:`CONCURRENT_WRITERS`, :data:`CHUNKS` (:class:`ChunkStore`), :data:`DOCUMENT_SOURCE_TYPE` (the only rows reads see), :func:`check_write`,
  :func:`chunks_by_row_id` (``iter_chunks`` of an SQL store), :func:`normalize_rows`,
  :class:`Candidates` / :class:`HybridCandidates` (the optional ``hybrid_candidates`` fast path), the keyword index (:class:`BM25Index`, :class:`BM25Config`)
  for stores without native BM25 and its text analysis (:class:`Analyzer`,
  :class:`AnalyzerConfig`) for stores with their own index, and filters: the parsed tree
  (:data:`FilterNode` = :class:`Condition` | :class:`And` | :class:`Or`),
  :class:`FilterVisitor` to translate it, :func:`parse_filter`, :func:`walk`, :func:`matches`;
- **retrievers**: :class:`RetrieverOptions` (``top_k``, ``threshold``, ``filter``),
  :class:`Scope` (per-call values over them), :func:`embed_query`;
- **rerankers**: :func:`reranked`, :func:`resolve_top_n`, :func:`rerank_or_fallback`
  (the shared "keep retrieval order on failure" policy);
- **executors** (``[ingest] executor``): :class:`Executor`, :class:`IngestTarget`,
  :func:`check_document`, :func:`resolve_source`, :func:`is_url`;
- **options**: :func:`structure_options` (a table into an attrs config class,
  with ragloom's error messages).

Conformance suites for your components are in :mod:`ragloom.testing`.
"""

from ragloom.aio import AsyncClients, bridge
from ragloom.analysis import Analyzer, AnalyzerConfig
from ragloom.chunkers.base import fingerprint_of, spans_to_chunks
from ragloom.embedders.base import DEFAULT_BATCH_SIZE, batched, check_embeddings, embed_in_batches
from ragloom.errors import (
    BlockedAddressError,
    ConfigError,
    DimensionMismatchError,
    EmbeddingError,
    FilterError,
    LLMError,
    LoaderError,
    PluginError,
    RagloomError,
    RerankError,
    ResponseTooLargeError,
    RobotsDisallowedError,
    StoreError,
    WebLoaderError,
)
from ragloom.filters import And, Condition, FilterNode, FilterVisitor, Or, combine, matches, parse_filter, walk
from ragloom.hookspecs import hookimpl
from ragloom.httpclient import HTTPOptions, JSONClient, check_http_url, parse_retry_after, post_json
from ragloom.keyword import BM25Config, BM25Index
from ragloom.loaders.base import (
    DEFAULT_MAX_TEXT_CHARS,
    Loader,
    SourceRouter,
    bom_encoding,
    check_text_chars,
    decode_text,
    file_metadata,
    is_url,
    resolve_source,
)
from ragloom.loaders.html import HtmlContent, decode_html, extract_html, html_metadata
from ragloom.pipeline import check_document
from ragloom.plugins import BuildContext
from ragloom.protocols import LLM, Chunker, Embedder, Executor, Reranker, Retriever, Store
from ragloom.rerankers.base import rerank_or_fallback, reranked, resolve_top_n
from ragloom.retrievers.base import RetrieverOptions, Scope, embed_query
from ragloom.stores.base import (
    CHUNK_ROW_COLUMNS,
    CHUNKS,
    CONCURRENT_WRITERS,
    KEYWORD_SEARCH,
    VECTORS,
    Candidates,
    ChunkStore,
    HybridCandidates,
    KeywordSearchStore,
    SourceStage,
    SourceState,
    VectorStore,
    WriteSession,
    check_write,
    chunks_by_row_id,
    normalize_rows,
)
from ragloom.structuring import Secret, structure_options
from ragloom.types import DOCUMENT_SOURCE_TYPE, Chunk, Document, IngestTarget, Result

#: The modules a plugin may import; every other ``ragloom.*`` module is private.
PUBLIC_MODULES = ("ragloom", "ragloom.plugin", "ragloom.testing")

__all__ = [
    "Analyzer",
    "AnalyzerConfig",
    "And",
    "AsyncClients",
    "BM25Config",
    "BM25Index",
    "BlockedAddressError",
    "BuildContext",
    "CHUNKS",
    "CHUNK_ROW_COLUMNS",
    "CONCURRENT_WRITERS",
    "Candidates",
    "Chunk",
    "ChunkStore",
    "Chunker",
    "Condition",
    "ConfigError",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_TEXT_CHARS",
    "DOCUMENT_SOURCE_TYPE",
    "DimensionMismatchError",
    "Document",
    "Embedder",
    "EmbeddingError",
    "Executor",
    "FilterError",
    "FilterNode",
    "FilterVisitor",
    "HTTPOptions",
    "HtmlContent",
    "HybridCandidates",
    "IngestTarget",
    "JSONClient",
    "KEYWORD_SEARCH",
    "KeywordSearchStore",
    "LLM",
    "LLMError",
    "Loader",
    "LoaderError",
    "Or",
    "PUBLIC_MODULES",
    "PluginError",
    "RagloomError",
    "RerankError",
    "Reranker",
    "ResponseTooLargeError",
    "Result",
    "Retriever",
    "RetrieverOptions",
    "RobotsDisallowedError",
    "Scope",
    "Secret",
    "SourceRouter",
    "SourceStage",
    "SourceState",
    "Store",
    "StoreError",
    "VECTORS",
    "VectorStore",
    "WebLoaderError",
    "WriteSession",
    "batched",
    "bom_encoding",
    "bridge",
    "check_document",
    "check_embeddings",
    "check_http_url",
    "check_text_chars",
    "check_write",
    "chunks_by_row_id",
    "combine",
    "decode_html",
    "decode_text",
    "embed_in_batches",
    "embed_query",
    "extract_html",
    "file_metadata",
    "fingerprint_of",
    "hookimpl",
    "html_metadata",
    "is_url",
    "matches",
    "normalize_rows",
    "parse_filter",
    "parse_retry_after",
    "post_json",
    "rerank_or_fallback",
    "reranked",
    "resolve_source",
    "resolve_top_n",
    "spans_to_chunks",
    "structure_options",
    "walk",
]
