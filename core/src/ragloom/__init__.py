"""ragloom: declarative, plugin-based retrieval-augmented generation pipelines."""

from ragloom.config import ComponentSpec, IngestConfig, PipelineConfig, Secret, SourceConfig
from ragloom.errors import (
    BlockedAddressError,
    ChunkerError,
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
    RetrievalError,
    RobotsDisallowedError,
    StoreError,
    WebLoaderError,
)
from ragloom.filters import parse_filter
from ragloom.hookspecs import hookimpl
from ragloom.pipeline import Pipeline, PipelineBuilder, Progress
from ragloom.plugins import BuildContext, ComponentInfo, Registry, make_plugin_manager
from ragloom.tools import Tool, rag_ingest_tool, rag_search_tool
from ragloom.types import Chunk, Document, Failure, IngestResult, Result, content_hash, metadata_hash

__all__ = [
    "BlockedAddressError",
    "BuildContext",
    "Chunk",
    "ChunkerError",
    "ComponentInfo",
    "ComponentSpec",
    "ConfigError",
    "DimensionMismatchError",
    "Document",
    "EmbeddingError",
    "Failure",
    "FilterError",
    "IngestConfig",
    "IngestResult",
    "LLMError",
    "LoaderError",
    "Pipeline",
    "PipelineBuilder",
    "PipelineConfig",
    "PluginError",
    "Progress",
    "RagloomError",
    "Registry",
    "RerankError",
    "ResponseTooLargeError",
    "Result",
    "RetrievalError",
    "RobotsDisallowedError",
    "Secret",
    "SourceConfig",
    "StoreError",
    "Tool",
    "WebLoaderError",
    "content_hash",
    "hookimpl",
    "make_plugin_manager",
    "metadata_hash",
    "parse_filter",
    "rag_ingest_tool",
    "rag_search_tool",
]
