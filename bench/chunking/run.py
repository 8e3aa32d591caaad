"""Chunking throughput: ragloom's chunkers against LangChain, semchunk, chonkie and LlamaIndex.

Corpus: ~20 MB of English prose in ~2,000 documents, built deterministically
from the SciFact abstracts (``shared/data/scifact/corpus.jsonl``): each
document is a run of ``## title`` + abstract sections. Every library chunks
every document with size 1000 characters and overlap 200 (where it has
overlap); the best of 3 runs counts.

"exact" is the share of chunks whose reported offsets satisfy
``text[start:end] == chunk`` (offsets taken from the library itself; LangChain
through ``create_documents(add_start_index=True)``, which searches with
``str.find``; "n/a" where the library returns no offsets).

Run: ``pip install -r bench/chunking/requirements.txt`` then
``python bench/chunking/bench.py [--mb 20] [--docs 2000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

SIZE, OVERLAP = 1000, 200
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact" / "corpus.jsonl"


def build_corpus(megabytes: float, documents: int, path: Path = CORPUS) -> list[str]:
    """Deterministic Markdown-ish prose documents of roughly equal size."""
    records = [json.loads(line) for line in path.open(encoding="utf-8")]
    sections = [f"## {r['title'].strip()}\n\n{r['text'].strip()}\n\n" for r in records if r["text"].strip()]
    target = int(megabytes * 1_000_000)
    per_doc = target // documents
    rng = random.Random(20)
    docs: list[str] = []
    pool: list[str] = []
    while len(docs) < documents:
        parts, length = [], 0
        while length < per_doc:
            if not pool:
                pool = sections[:]
                rng.shuffle(pool)
            part = pool.pop()
            parts.append(part)
            length += len(part)
        docs.append(f"# Document {len(docs) + 1}\n\n" + "".join(parts))
    return docs


Result = list[tuple[int, int, str]] | list[str]


def exact_share(docs: list[str], outputs: list[Result]) -> str:
    """Share of chunks whose offsets are right: the slice is the chunk, in order, no text skipped.

    ``str.find``-based offsets always slice to the chunk's text, but on repeated
    passages they can point at a later copy: the chunk then starts before its
    predecessor or leaves a gap of skipped text, which this check catches.
    """
    total = exact = 0
    for text, chunks in zip(docs, outputs, strict=False):
        previous_start, previous_end = -1, 0
        for item in chunks:
            if isinstance(item, str):
                return "n/a"
            start, end, chunk = item
            total += 1
            in_order = start > previous_start and not text[previous_end:start].strip()
            exact += text[start:end] == chunk and in_order
            previous_start, previous_end = start, max(previous_end, end)
    return f"{exact / total:.1%}" if total else "n/a"


def repeated_passages(documents: int = 200) -> list[str]:
    """Documents made of one passage repeated, where str.find-based offsets go wrong."""
    rng = random.Random(7)
    words = "lamp light warm glow dim bright switch cable button firmware update night desk".split()
    docs = []
    for _ in range(documents):
        passage = " ".join(rng.choice(words) for _ in range(60)) + ".\n\n"
        docs.append(passage * rng.randint(10, 30))
    return docs


def run(name: str, fn: Callable[[str], Result], docs: list[str], repeat: int, offsets: Callable[[list[str]], list[Result]] | None = None) -> dict:
    megabytes = sum(len(d) for d in docs) / 1_000_000
    best = best_cpu = float("inf")
    outputs: list[Result] = []
    for _ in range(repeat):
        gc.collect()
        began, began_cpu = time.perf_counter(), time.process_time()
        outputs = [fn(d) for d in docs]
        best = min(best, time.perf_counter() - began)
        best_cpu = min(best_cpu, time.process_time() - began_cpu)
    share = exact_share(docs, offsets(docs) if offsets else outputs)
    row = {
        "library": name,
        "mb_s": megabytes / best,
        "mb_s_cpu": megabytes / best_cpu,
        "seconds": best,
        "chunks": sum(len(o) for o in outputs),
        "exact": share,
    }
    print(f"{name:<44} {row['mb_s']:>8.1f} MB/s {row['mb_s_cpu']:>8.1f} MB/s CPU {row['chunks']:>9,} chunks  exact {share}", flush=True)
    return row


def ragloom_rows(docs: list[str], repeat: int) -> list[dict]:
    from ragloom.chunkers import (
        MarkdownChunker,
        MarkdownConfig,
        RecursiveChunker,
        RecursiveConfig,
        SentenceChunker,
        SentenceConfig,
    )
    from ragloom.types import Document

    rows = []
    for name, chunker in (
        ("ragloom recursive (offsets, overlap)", RecursiveChunker(RecursiveConfig(size=SIZE, overlap=OVERLAP))),
        ("ragloom sentence (offsets, overlap)", SentenceChunker(SentenceConfig(size=SIZE, overlap=OVERLAP))),
        ("ragloom markdown (offsets, overlap, headings)", MarkdownChunker(MarkdownConfig(size=SIZE, overlap=OVERLAP))),
    ):
        spans = chunker.spans  # bind once

        def fn(text: str, spans=spans) -> Result:  # type: ignore[no-untyped-def]
            return [(s, e, text[s:e]) for s, e in spans(text)]

        rows.append(run(name, fn, docs, repeat))
    word_level = RecursiveChunker(RecursiveConfig(size=SIZE, overlap=OVERLAP, separators=("\n\n", "\n", " ")))
    rows.append(run("ragloom recursive, LangChain's separators", lambda t: [(s, e, t[s:e]) for s, e in word_level.spans(t)], docs, repeat))
    recursive = RecursiveChunker(RecursiveConfig(size=SIZE, overlap=OVERLAP))
    documents = [Document.create(d, f"doc{i}") for i, d in enumerate(docs)]
    by_text = dict(zip(docs, documents, strict=False))

    def records(text: str) -> Result:
        return [(c.start, c.end, c.text) for c in recursive.chunk(by_text[text])]

    rows.append(run("ragloom recursive .chunk() (Chunk records)", records, docs, repeat))
    return rows


def competitor_rows(docs: list[str], repeat: int) -> list[dict]:
    rows = []
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP)
        indexed = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP, add_start_index=True)

        def langchain_offsets(texts: list[str]) -> list[Result]:
            out: list[Result] = []
            for text in texts:
                out.append([(d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content), d.page_content) for d in indexed.create_documents([text])])
            return out

        rows.append(run("LangChain RecursiveCharacterTextSplitter", splitter.split_text, docs, repeat, langchain_offsets))
        sentences = RecursiveCharacterTextSplitter(
            chunk_size=SIZE, chunk_overlap=OVERLAP, separators=["\n\n", "\n", ". ", " ", ""], keep_separator="end"
        )
        rows.append(run("LangChain, ragloom's separators", sentences.split_text, docs, repeat))
    except ImportError as exc:
        print(f"LangChain not installed: {exc}")
    try:
        import semchunk

        def semchunk_fn(text: str) -> Result:
            chunks, offsets = semchunk.chunk(text, SIZE, len, offsets=True, overlap=OVERLAP)
            return [(s, e, c) for c, (s, e) in zip(chunks, offsets, strict=False)]

        rows.append(run("semchunk (len counter, offsets, overlap)", semchunk_fn, docs, repeat))
    except ImportError as exc:
        print(f"semchunk not installed: {exc}")
    try:
        from chonkie import RecursiveChunker as ChonkieRecursive

        chonkie = ChonkieRecursive(chunk_size=SIZE)

        def chonkie_fn(text: str) -> Result:
            return [(c.start_index, c.end_index, c.text) for c in chonkie.chunk(text)]

        rows.append(run("chonkie RecursiveChunker (no overlap)", chonkie_fn, docs, repeat))
    except ImportError as exc:
        print(f"chonkie not installed: {exc}")
    try:
        from llama_index.core.node_parser import SentenceSplitter

        llama = SentenceSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP, tokenizer=list)
        rows.append(run("LlamaIndex SentenceSplitter (char tokens)", llama.split_text, docs, repeat))
    except ImportError as exc:
        print(f"llama-index-core not installed: {exc}")
    return rows


def print_repeats(docs: list[str]) -> None:
    """Exact-offset share of each library that reports offsets, on repeated passages."""
    from ragloom.chunkers import RecursiveChunker, RecursiveConfig

    recursive = RecursiveChunker(RecursiveConfig(size=SIZE, overlap=OVERLAP))
    checks: list[tuple[str, Callable[[str], Result]]] = [("ragloom recursive", lambda t: [(s, e, t[s:e]) for s, e in recursive.spans(t)])]
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        indexed = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP, add_start_index=True)
        checks.append(
            (
                "LangChain add_start_index",
                lambda t: [(d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content), d.page_content) for d in indexed.create_documents([t])],
            )
        )
    except ImportError:
        pass
    try:
        import semchunk

        def semchunk_fn(t: str) -> Result:
            chunks, offsets = semchunk.chunk(t, SIZE, len, offsets=True, overlap=OVERLAP)
            return [(s, e, c) for c, (s, e) in zip(chunks, offsets, strict=True)]

        checks.append(("semchunk offsets", semchunk_fn))
    except ImportError:
        pass
    try:
        from chonkie import RecursiveChunker as ChonkieRecursive

        chonkie = ChonkieRecursive(chunk_size=SIZE)
        checks.append(("chonkie start/end_index", lambda t: [(c.start_index, c.end_index, c.text) for c in chonkie.chunk(t)]))
    except ImportError:
        pass
    for name, fn in checks:
        print(f"{name:<44} exact {exact_share(docs, [fn(d) for d in docs])}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="SciFact corpus.jsonl to build the documents from")
    parser.add_argument("--only-ragloom", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    docs = build_corpus(args.mb, args.docs, args.corpus)
    print(f"corpus: {len(docs)} documents, {sum(map(len, docs)) / 1e6:.1f} M characters; size {SIZE}, overlap {OVERLAP}; best of {args.repeat}")
    print(f"load average before the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = ragloom_rows(docs, args.repeat)
    if not args.only_ragloom:
        rows += competitor_rows(docs, args.repeat)
        langchain = next((r for r in rows if r["library"].startswith("LangChain")), None)
        if langchain:
            for r in rows:
                print(f"{r['library']:<44} {r['mb_s'] / langchain['mb_s']:>6.2f}x LangChain (CPU time: {r['mb_s_cpu'] / langchain['mb_s_cpu']:.2f}x)")
        print("\nrepeated passages (offset check only):")
        print_repeats(repeated_passages())
    print(f"load average after the run: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
