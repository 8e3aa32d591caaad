"""Retrieval quality as numbers: run a pipeline over a BEIR-format dataset (``ragloom eval``).

A BEIR dataset folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``,
``corpus-id``, ``score``). Every corpus line becomes a document whose text is
``title + "\\n" + text`` and whose metadata holds ``doc_id``; chunk results are
mapped back to documents (a document's score is its best chunk's). The metrics
follow trec_eval / pytrec_eval (linear gain nDCG, binary recall and reciprocal
rank, relevance > 0) and are averaged over every query of the split that has
judgements — a query that retrieves nothing counts as 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.errors import ConfigError, RagloomError
from ragloom.types import Document

if TYPE_CHECKING:  # the pipeline is imported when an evaluation runs
    from ragloom.pipeline import Pipeline
    from ragloom.protocols import Retriever

DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
_METRIC_NAMES = {"ndcg": "nDCG", "recall": "Recall", "mrr": "MRR"}

Qrels = Mapping[str, Mapping[str, int]]


# --------------------------------------------------------------------------- dataset


@attrs.frozen(kw_only=True)
class BeirDataset:
    """A BEIR-format dataset folder and one split of its judgements."""

    root: Path
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def name(self) -> str:
        """The folder's name (``scifact``)."""
        return self.root.name

    @property
    def corpus_path(self) -> Path:
        """``corpus.jsonl``."""
        return self.root / "corpus.jsonl"

    def documents(self) -> Iterator[Document]:
        """The corpus as documents, streamed (one source: the corpus file)."""
        source = str(self.corpus_path.resolve())
        for number, item in _read_jsonl(self.corpus_path):
            doc_id = item.get("_id")
            if doc_id is None or str(doc_id) == "":
                raise ConfigError(f"{self.corpus_path}:{number}: a corpus line needs an '_id'")
            title = str(item.get("title") or "")
            text = str(item.get("text") or "")
            body = f"{title}\n{text}" if title else text
            metadata = {"doc_id": str(doc_id)}
            if title:
                metadata["title"] = title
            yield Document.create(body, source, part=str(doc_id), metadata=metadata)


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path}:{number}: invalid JSON: {exc}") from None
            if not isinstance(item, dict):
                raise ConfigError(f"{path}:{number}: expected a JSON object")
            yield number, item


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: relevance}}`` from a BEIR qrels TSV (header line optional)."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or not "".join(row).strip():
                continue
            if number == 1 and row[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            if len(row) < 3:
                raise ConfigError(f"{path}:{number}: expected query-id, corpus-id, score")
            try:
                score = int(float(row[2]))
            except ValueError:
                raise ConfigError(f"{path}:{number}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = score
    return qrels


def load_beir(dataset_dir: str | os.PathLike[str], *, split: str = "test") -> BeirDataset:
    """Read the queries and the judgements of one split (the corpus is streamed later)."""
    root = Path(dataset_dir)
    if not root.is_dir():
        raise ConfigError(f"dataset folder not found: {root}")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (root / name).is_file():
            raise ConfigError(f"{root} is not a BEIR dataset: {name} is missing")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        raise ConfigError(f"no judgements for split {split!r}: {qrels_path} is missing (available: {', '.join(available) or 'none'})")
    qrels = load_qrels(qrels_path)
    queries = {str(item.get("_id")): str(item.get("text") or "") for _, item in _read_jsonl(root / "queries.jsonl")}
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise ConfigError(f"{qrels_path}: {len(missing)} judged queries are not in queries.jsonl (e.g. {missing[0]!r})")
    return BeirDataset(root=root, split=split, queries={qid: queries[qid] for qid in qrels}, qrels=qrels)


# --------------------------------------------------------------------------- metrics


def parse_metric(name: str) -> tuple[str, int]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``."""
    kind, _, cutoff = name.lower().partition("@")
    if kind not in _METRIC_NAMES or not cutoff.isdigit() or int(cutoff) <= 0:
        raise ConfigError(f"unknown metric {name!r}; use ndcg@K, recall@K or mrr@K")
    return kind, int(cutoff)


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """nDCG@k with linear gain (trec_eval's ``ndcg_cut``)."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1) if judged.get(doc, 0) > 0)
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    relevant = {doc for doc, g in judged.items() if g > 0}
    return len(relevant.intersection(ranking[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """1 / rank of the first relevant document in the top k (0 when none)."""
    for rank, doc in enumerate(ranking[:k], start=1):
        if judged.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


_METRIC_FUNCTIONS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def score_per_query(rankings: Mapping[str, Sequence[str]], qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, dict[str, float]]:
    """``{query_id: {metric: value}}`` for every judged query (a query absent from ``rankings`` scores 0)."""
    parsed = [(name, *parse_metric(name)) for name in metrics]
    judged_queries = [qid for qid, judged in qrels.items() if any(g > 0 for g in judged.values())]
    return {
        qid: {name: _METRIC_FUNCTIONS[kind](rankings.get(qid, ()), qrels[qid], k) for name, kind, k in parsed}
        for qid in judged_queries
    }


def mean_scores(per_query: Mapping[str, Mapping[str, float]], metrics: Sequence[str]) -> dict[str, float]:
    """Each metric averaged over the queries of :func:`score_per_query`."""
    count = len(per_query) or 1
    return {name: sum(values[name] for values in per_query.values()) / count for name in metrics}


def score_rankings(rankings: Mapping[str, Sequence[str]], qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, float]:
    """Mean of each metric over every judged query (a query absent from ``rankings`` scores 0)."""
    return mean_scores(score_per_query(rankings, qrels, metrics), metrics)


def oracle(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per query and metric, the best of the retrievers (``{retriever: {qid: {metric: v}}}``): an upper reference."""
    members = list(per_query.values())
    return {qid: {m: max(member[qid][m] for member in members) for m in metrics} for qid in members[0]} if members else {}


def randomization_test(a: Sequence[float], b: Sequence[float], *, rounds: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of a paired randomization (sign-flip) test that mean(a - b) is 0.

    Each round flips the sign of every paired difference at random; p is the
    share of rounds (plus the observed one) whose |mean| reaches the observed.
    """
    import numpy as np

    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.size == 0 or not np.any(diff):
        return 1.0
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, rounds, 1000):  # 1000 rounds at a time bounds memory
        signs = rng.integers(0, 2, size=(min(1000, rounds - start), diff.size), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ diff) / diff.size >= observed - 1e-12))
    return (hits + 1) / (rounds + 1)


def compare(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], metric: str) -> list[dict[str, Any]]:
    """Every pair of retrievers on ``metric``: the mean difference (first minus second) and its p-value."""
    names = list(per_query)
    rows = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            qids = list(per_query[first])
            a = [per_query[first][q][metric] for q in qids]
            b = [per_query[second][q][metric] for q in qids]
            rows.append({
                "a": first,
                "b": second,
                "metric": metric,
                "difference": (sum(a) - sum(b)) / (len(qids) or 1),
                "p_value": randomization_test(a, b),
            })
    return rows


def documents_ranking(results: Iterable[Any]) -> list[str]:
    """Chunk results (best first) -> document ids ranked by their best chunk."""
    ranking: list[str] = []
    seen: set[str] = set()
    for result in sorted(results, key=lambda r: -r.score):
        doc_id = str(result.metadata.get("doc_id", result.document_id))
        if doc_id not in seen:
            seen.add(doc_id)
            ranking.append(doc_id)
    return ranking


# --------------------------------------------------------------------------- running


def _pipeline_for(pipeline_or_config: Any, dataset: BeirDataset) -> tuple[Any, bool]:
    from ragloom.config import PipelineConfig
    from ragloom.pipeline import Pipeline

    if isinstance(pipeline_or_config, Pipeline):
        return pipeline_or_config, False
    if pipeline_or_config is None:
        config = PipelineConfig()
    elif isinstance(pipeline_or_config, PipelineConfig):
        config = pipeline_or_config
    elif isinstance(pipeline_or_config, (str, os.PathLike)):
        config = PipelineConfig.from_toml(pipeline_or_config)
    else:
        raise ConfigError(f"evaluate() takes a Pipeline, a PipelineConfig or a TOML path, got {type(pipeline_or_config).__name__}")
    config = attrs.evolve(config, namespace=f"{config.namespace}-eval-{dataset.name}")
    return Pipeline.from_config(config), True


def _retriever(pipeline: Pipeline, name: str | None) -> tuple[str, Retriever]:
    configured = pipeline.config.retriever.type
    if name is None or name == configured:
        return configured, pipeline.retriever
    from ragloom.plugins import BuildContext

    context = BuildContext(
        registry=pipeline.registry,
        base_dir=pipeline.config.base_dir,
        namespace=pipeline.namespace,
        embedder=pipeline.embedder,
        store=pipeline.store,
        llm=pipeline.llm,
    )
    return name, context.build("retriever", name, {}, path=f"--retriever {name}")


def latency_percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """``latency_p50_ms``, ``latency_p95_ms`` and ``latency_max_ms`` of per-query wall times (zeros for none)."""
    if not seconds:
        return {"latency_p50_ms": 0.0, "latency_p95_ms": 0.0, "latency_max_ms": 0.0}
    ordered = sorted(seconds)

    def at(fraction: float) -> float:  # linear interpolation, as numpy.percentile's default
        position = fraction * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return {
        "latency_p50_ms": round(at(0.50) * 1000, 3),
        "latency_p95_ms": round(at(0.95) * 1000, 3),
        "latency_max_ms": round(ordered[-1] * 1000, 3),
    }


def evaluate(
    pipeline_or_config: Any,
    dataset_dir: str | os.PathLike[str],
    *,
    split: str = "test",
    retrievers: Sequence[str] | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    per_query: bool = False,
) -> dict[str, Any]:
    """Ingest a BEIR dataset into the pipeline's store and score each retriever.

    ``pipeline_or_config``: a Pipeline (used as is), a PipelineConfig or a TOML
    path (built with namespace ``<namespace>-eval-<dataset>``), or None for the
    default pipeline. ``retrievers``: registered names (the configured retriever
    keeps its options; others get their defaults); None: the configured one.
    The pipeline's reranker, if any, reorders each retriever's candidates.

    With two or more retrievers the report adds ``oracle`` (per query, the best
    retriever's value: an upper reference, not a retriever) and ``comparisons``
    (each pair's mean difference on the first metric with a paired
    randomization test's p-value). ``per_query``: also each query's metrics
    per retriever (``report["per_query"][retriever][query_id]``).
    """
    dataset = load_beir(dataset_dir, split=split)
    depth = max(parse_metric(m)[1] for m in metrics)
    pipeline, owned = _pipeline_for(pipeline_or_config, dataset)
    try:
        started = time.perf_counter()
        ingested = pipeline.ingest_documents(dataset.documents())
        ingest_seconds = time.perf_counter() - started
        stats = pipeline.store.stats(pipeline.namespace)
        documents = stats.get("documents") or ingested.documents or 1
        chunks = stats.get("chunks") or documents
        fetch = max(depth, math.ceil(depth * chunks / documents))
        report: dict[str, Any] = {
            "dataset": dataset.name,
            "split": split,
            "queries": len(dataset.queries),
            "documents": documents,
            "chunks": chunks,
            "ingest_seconds": round(ingest_seconds, 3),
            "fetch": fetch,
            "retrievers": {},
        }
        every_query: dict[str, dict[str, dict[str, float]]] = {}
        requested_names: list[str | None] = list(retrievers) if retrievers else [None]
        for requested in requested_names:
            name, retriever = _retriever(pipeline, requested)
            rankings: dict[str, list[str]] = {}
            latencies: list[float] = []
            started = time.perf_counter()
            for qid, text in dataset.queries.items():
                began = time.perf_counter()
                results = retriever.retrieve(text, top_k=fetch) if text.strip() else []
                if pipeline.reranker is not None and results:
                    results = pipeline.reranker.rerank(text, results, len(results))
                latencies.append(time.perf_counter() - began)
                rankings[qid] = documents_ranking(results)
            seconds = time.perf_counter() - started
            every_query[name] = score_per_query(rankings, dataset.qrels, metrics)
            scores: dict[str, float] = mean_scores(every_query[name], metrics)
            scores["queries_per_second"] = round(len(dataset.queries) / seconds, 1) if seconds > 0 else 0.0
            scores.update(latency_percentiles(latencies))
            report["retrievers"][name] = scores
        if len(every_query) > 1:
            report["oracle"] = mean_scores(oracle(every_query, metrics), metrics)
            report["comparisons"] = compare(every_query, metrics[0])
        if per_query:
            report["per_query"] = every_query
        return report
    finally:
        if owned:
            pipeline.close()


# --------------------------------------------------------------------------- CLI


def format_report(report: Mapping[str, Any], metrics: Sequence[str] = DEFAULT_METRICS) -> str:
    """A plain-text table of an :func:`evaluate` report."""
    headers = ["retriever", *(f"{_METRIC_NAMES[parse_metric(m)[0]]}@{parse_metric(m)[1]}" for m in metrics), "queries/s", "p50 ms", "p95 ms"]
    rows = [
        [
            name,
            *(f"{scores[m]:.4f}" for m in metrics),
            f"{scores['queries_per_second']:.0f}",
            f"{scores.get('latency_p50_ms', 0.0):.2f}",
            f"{scores.get('latency_p95_ms', 0.0):.2f}",
        ]
        for name, scores in report["retrievers"].items()
    ]
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [
        f"{report['dataset']} ({report['split']}): {report['queries']} queries, {report['documents']} documents, "
        f"{report['chunks']} chunks, ingest {report['ingest_seconds']:.1f} s"
        + (f"; each query fetches {report['fetch']} chunks (one at a time, wall clock)" if "fetch" in report else ""),
        "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True))),
    ]
    if "oracle" in report:
        rows.append(["oracle (per-query max)", *(f"{report['oracle'][m]:.4f}" for m in metrics), "-", "-", "-"])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines[1] = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    for row in report.get("comparisons", ()):
        lines.append(
            f"{row['a']} - {row['b']}: {row['metric']} {row['difference']:+.4f} "
            f"(paired randomization test, p = {row['p_value']:.4f})"
        )
    if "per_query" in report:
        names = list(report["per_query"])
        first = metrics[0]
        lines.append("")
        lines.append("\t".join(["query", *(f"{name} {first}" for name in names)]))
        for qid in report["per_query"][names[0]]:
            lines.append("\t".join([qid, *(f"{report['per_query'][name][qid][first]:.4f}" for name in names)]))
    return "\n".join(lines)


def cmd_eval(args: argparse.Namespace) -> int:
    """``ragloom eval DATASET_DIR``."""
    config_path = getattr(args, "config", None)
    if config_path is not None and not Path(config_path).exists():
        if config_path != "ragloom.toml":
            raise RagloomError(f"config file not found: {config_path} (pass -c/--config PATH)")
        config_path = None  # no ragloom.toml here: evaluate the default pipeline
    config: Any = config_path
    namespace = getattr(args, "namespace", None)
    if namespace:
        from ragloom.config import PipelineConfig

        base = PipelineConfig.from_toml(config_path) if config_path else PipelineConfig()
        config = attrs.evolve(base, namespace=namespace)
    report = evaluate(
        config, args.dataset, split=args.split, retrievers=args.retrievers or None, per_query=args.per_query
    )
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0


def add_eval_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``eval`` to the ``ragloom`` command's subparsers."""
    parser = subparsers.add_parser(
        "eval",
        help="score retrieval on a BEIR-format dataset (nDCG@10, Recall@10, Recall@100, MRR@10)",
        description="Ingest a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) into the "
        "pipeline's store (namespace <namespace>-eval-<dataset>) and score each retriever.",
    )
    parser.add_argument("dataset", metavar="DATASET_DIR", help="folder with corpus.jsonl, queries.jsonl and qrels/")
    parser.add_argument("--split", default="test", help="qrels split to score (default: test)")
    parser.add_argument(
        "--retriever", action="append", default=[], dest="retrievers", metavar="NAME",
        help="retriever to score (repeatable; default: the configured one)",
    )
    parser.add_argument(
        "--per-query", action="store_true",
        help="also print each query's metric per retriever (JSON: every metric, under 'per_query')",
    )
    parser.add_argument("-c", "--config", default=argparse.SUPPRESS, help="pipeline TOML file (default: ragloom.toml, else built-in defaults)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    parser.add_argument("--namespace", default=argparse.SUPPRESS, help="namespace prefix instead of the config's (<namespace>-eval-<dataset>)")
    parser.set_defaults(handler=cmd_eval)
    return parser
