"""Test plugin: one component per remaining hook, each small but real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from ragloom import Document, hookimpl
from ragloom.stores.memory import MemoryStore


@attrs.frozen(kw_only=True)
class KeyValueConfig:
    separator: str = "="


class KeyValueLoader:
    """``key=value`` lines; the ``text`` key becomes the document text, the rest metadata."""

    def __init__(self, config: KeyValueConfig):
        self.config = config

    def load(self, source: str):  # type: ignore[no-untyped-def]
        pairs = dict(line.split(self.config.separator, 1) for line in Path(source).read_text().splitlines() if line)
        text = pairs.pop("text", "")
        yield Document.create(text, source, metadata=pairs)


class CountingStore(MemoryStore):
    """The memory store, counting searches."""

    def __init__(self) -> None:
        super().__init__()
        self.searches = 0

    def search(self, namespace, vector, *, top_k, filter=None):  # type: ignore[no-untyped-def]
        self.searches += 1
        return super().search(namespace, vector, top_k=top_k, filter=filter)


class LongestFirst:
    """Retriever: the store's candidates, longest text first."""

    def __init__(self, store: Any, embedder: Any, namespace: str):
        self.store, self.embedder, self.namespace = store, embedder, namespace

    def retrieve(self, query, *, top_k=None, threshold=None, filter=None):  # type: ignore[no-untyped-def]
        hits = self.store.search(self.namespace, self.embedder.embed_query(query), top_k=top_k or 5, filter=filter)
        return sorted(hits, key=lambda h: -len(h.text))


@attrs.frozen(kw_only=True)
class ReverseConfig:
    top_n: int = 2


class Reverse:
    """Reranker: reverses the retrieval order, keeps the retrieval score."""

    def __init__(self, top_n: int):
        self.top_n = top_n

    def rerank(self, query, results, top_n=None):  # type: ignore[no-untyped-def]
        chosen = list(reversed(results))[: top_n or self.top_n]
        return [r.with_score(1.0 / (i + 1), retrieval_score=r.score) for i, r in enumerate(chosen)]


@hookimpl
def register_loaders(register):  # type: ignore[no-untyped-def]
    register("keyvalue", lambda config, context: KeyValueLoader(config), config=KeyValueConfig, suffixes=(".kv",))


@hookimpl
def register_stores(register):  # type: ignore[no-untyped-def]
    register("counting", lambda config, context: CountingStore())


@hookimpl
def register_retrievers(register):  # type: ignore[no-untyped-def]
    register("longest", lambda config, context: LongestFirst(context.store, context.embedder, context.namespace))


class EchoLLM:
    """LLM: answers with the prompt's last line, upper-cased."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def generate(self, prompt: str) -> str:
        return self.prefix + prompt.splitlines()[-1].upper()


@attrs.frozen(kw_only=True)
class EchoConfig:
    prefix: str = "> "


@hookimpl
def register_llms(register):  # type: ignore[no-untyped-def]
    register("echo", lambda config, context: EchoLLM(config.prefix), config=EchoConfig)


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    register("reverse", lambda config, context: Reverse(config.top_n), config=ReverseConfig)
