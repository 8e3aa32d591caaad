"""ragloom eval: BEIR loading, metrics checked against pytrec_eval, the report and the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from ragloom.cli import main
from ragloom.config import PipelineConfig
from ragloom.errors import ConfigError
from ragloom.evaluation import documents_ranking, evaluate, format_report, load_beir, parse_metric, score_rankings
from ragloom.types import Result

TINY = Path(__file__).parent / "fixtures" / "tiny"


def _random_case(rng: random.Random) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    docs = [f"doc{i}" for i in range(150)]
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, list[str]] = {}
    for q in range(40):
        judged = rng.sample(docs, rng.randint(1, 12))
        grades = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        grades[judged[0]] = max(1, grades[judged[0]])  # at least one relevant document
        qrels[f"q{q}"] = grades
        rankings[f"q{q}"] = rng.sample(docs, rng.randint(1, 130))
    return qrels, rankings


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_metrics_match_pytrec_eval(seed: int) -> None:
    qrels, rankings = _random_case(random.Random(seed))
    mine = score_rankings(rankings, qrels, ("ndcg@10", "recall@10", "recall@100", "mrr@10", "ndcg@3"))
    # pytrec_eval ranks by score: give strictly decreasing scores in our order
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in rankings.items()}
    top10 = {q: {d: float(len(r) - i) for i, d in enumerate(r[:10])} for q, r in rankings.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3,10", "recall.10,100"})
    per_query = evaluator.evaluate(run)
    reciprocal = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    n = len(qrels)
    assert mine["ndcg@10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in per_query.values()) / n, abs=1e-6)
    assert mine["ndcg@3"] == pytest.approx(sum(v["ndcg_cut_3"] for v in per_query.values()) / n, abs=1e-6)
    assert mine["recall@10"] == pytest.approx(sum(v["recall_10"] for v in per_query.values()) / n, abs=1e-6)
    assert mine["recall@100"] == pytest.approx(sum(v["recall_100"] for v in per_query.values()) / n, abs=1e-6)
    assert mine["mrr@10"] == pytest.approx(sum(v["recip_rank"] for v in reciprocal.values()) / n, abs=1e-6)


def test_missing_rankings_count_as_zero_and_metric_names() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    assert score_rankings({"a": ["x"]}, qrels, ("recall@10",)) == {"recall@10": 0.5}
    assert parse_metric("nDCG@10") == ("ndcg", 10)
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_metric("map@10")


def test_documents_ranking_keeps_each_documents_best_chunk() -> None:
    def result(chunk: str, doc: str, score: float) -> Result:
        return Result(chunk_id=chunk, document_id="internal-" + doc, text="", score=score, source="/c", metadata={"doc_id": doc})

    ranked = documents_ranking([result("1", "A", 0.5), result("2", "B", 0.9), result("3", "A", 0.95), result("4", "C", 0.1)])
    assert ranked == ["A", "B", "C"]


def test_load_beir() -> None:
    dataset = load_beir(TINY)
    assert dataset.name == "tiny" and set(dataset.queries) == {"q1", "q2", "q3", "q4"}  # only judged queries
    assert dataset.qrels["q1"] == {"d1": 2, "d2": 1}
    docs = list(dataset.documents())
    assert len(docs) == 8
    assert docs[0].text.startswith("Wi-Fi setup\nHold the power button") and docs[0].metadata["doc_id"] == "d1"
    assert docs[5].text.startswith("Circadian mode") and "title" not in docs[5].metadata
    assert len({d.id for d in docs}) == 8
    assert set(load_beir(TINY, split="dev").queries) == {"q2"}
    with pytest.raises(ConfigError, match="available: dev, test"):
        load_beir(TINY, split="train")
    with pytest.raises(ConfigError, match="not found"):
        load_beir(TINY / "nope")


def test_evaluate_per_retriever_with_chunked_documents() -> None:
    config = PipelineConfig.from_dict({"chunker": {"size": 60}, "retriever": {"type": "bm25"}})
    report = evaluate(config, TINY, retrievers=["bm25", "hybrid", "similarity"])
    assert report["queries"] == 4 and report["documents"] == 8 and report["chunks"] > 8
    assert set(report["retrievers"]) == {"bm25", "hybrid", "similarity"}
    bm25 = report["retrievers"]["bm25"]
    assert bm25["recall@10"] == 1.0 and bm25["recall@100"] == 1.0 and bm25["mrr@10"] == 1.0
    assert 0.9 < bm25["ndcg@10"] <= 1.0
    assert all(0.0 <= v <= 1.0 for scores in report["retrievers"].values() for k, v in scores.items() if "@" in k)
    text = format_report(report)
    assert "nDCG@10" in text and "Recall@100" in text and "MRR@10" in text and "hybrid" in text
    # latency percentiles beside queries/s, and the fetch depth that queries/s is measured at
    assert report["fetch"] >= 100  # recall@100 over chunked documents asks for more than 100 chunks
    for scores in report["retrievers"].values():
        assert 0 < scores["latency_p50_ms"] <= scores["latency_p95_ms"] <= scores["latency_max_ms"]
    assert "p50 ms" in text and "p95 ms" in text and f"each query fetches {report['fetch']} chunks" in text


def test_latency_percentiles_interpolate_like_numpy() -> None:
    from ragloom.evaluation import latency_percentiles

    assert latency_percentiles([]) == {"latency_p50_ms": 0.0, "latency_p95_ms": 0.0, "latency_max_ms": 0.0}
    values = [0.001 * v for v in (5, 1, 4, 2, 3, 100)]
    got = latency_percentiles(values)
    assert got["latency_p50_ms"] == 3.5  # between 3 and 4 ms
    assert got["latency_p95_ms"] == 76.25  # position 4.75 of 0..5: 5 ms + 0.75 * (100 - 5) ms
    assert got["latency_max_ms"] == 100.0


def test_eval_command_json_and_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "eval.toml"
    config.write_text('[chunker]\nsize = 2000\n\n[retriever]\ntype = "hybrid"\nmode = "convex"\n', encoding="utf-8")
    assert main(["eval", str(TINY), "-c", str(config), "--retriever", "bm25", "--retriever", "hybrid", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"] == "test" and set(report["retrievers"]) == {"bm25", "hybrid"}
    assert report["retrievers"]["bm25"]["recall@10"] == 1.0
    monkeypatch.chdir(tmp_path)  # no ragloom.toml here: the default pipeline
    assert main(["eval", str(TINY), "--split", "dev"]) == 0
    out = capsys.readouterr().out
    assert "tiny (dev): 1 queries, 8 documents" in out and "similarity" in out


def test_eval_command_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["eval", str(tmp_path / "missing")]) == 1
    assert "dataset folder not found" in capsys.readouterr().err
    assert main(["eval", str(TINY), "-c", str(tmp_path / "none.toml")]) == 1
    assert "config file not found" in capsys.readouterr().err
    assert main(["eval", str(TINY), "--retriever", "bm99"]) == 1
    assert "unknown retriever type 'bm99'" in capsys.readouterr().err


def test_randomization_test_p_values() -> None:
    from ragloom.evaluation import randomization_test

    rng = random.Random(3)
    noise = [rng.gauss(0, 0.2) for _ in range(200)]
    base = [rng.random() for _ in range(200)]
    better = [b + 0.1 for b in base]  # a constant gain on every query: certainly not chance
    assert randomization_test(better, base) < 0.001
    same_mean = [b + n for b, n in zip(base, noise, strict=True)]
    shifted = [s - sum(noise) / len(noise) for s in same_mean]  # zero mean difference exactly
    assert randomization_test(shifted, base) > 0.9
    assert randomization_test(base, base) == 1.0
    # a single query's gain is never significant: the smallest reachable p with one pair is 1/2
    assert randomization_test([1.0], [0.0]) > 0.4


def test_oracle_takes_each_querys_best_member() -> None:
    from ragloom.evaluation import oracle

    per_query = {
        "a": {"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.0}},
        "b": {"q1": {"ndcg@10": 0.2}, "q2": {"ndcg@10": 0.5}},
    }
    assert oracle(per_query, ["ndcg@10"]) == {"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.5}}


def test_eval_command_per_query_oracle_and_p_values(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text("[chunker]\nsize = 2000\n", encoding="utf-8")
    assert main(["eval", str(TINY), "-c", str(config), "--retriever", "bm25", "--retriever", "similarity", "--per-query"]) == 0
    out = capsys.readouterr().out
    assert "oracle (per-query max)" in out
    assert "bm25 - similarity: ndcg@10" in out and "p = " in out
    rows = [line.split("\t") for line in out.splitlines() if line[:2] in ("q1", "q2", "q3", "q4")]
    assert len(rows) == 4 and all(len(row) == 3 for row in rows)
    assert main(["eval", str(TINY), "-c", str(config), "--retriever", "bm25", "--retriever", "similarity", "--per-query", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    per_query = report["per_query"]
    assert set(per_query) == {"bm25", "similarity"} and len(per_query["bm25"]) == 4
    for metric in ("ndcg@10", "recall@10"):
        best = sum(max(per_query["bm25"][q][metric], per_query["similarity"][q][metric]) for q in per_query["bm25"]) / 4
        assert report["oracle"][metric] == pytest.approx(best)
        assert report["oracle"][metric] >= max(report["retrievers"][r][metric] for r in ("bm25", "similarity"))
    (comparison,) = report["comparisons"]
    assert comparison["a"] == "bm25" and comparison["b"] == "similarity" and 0 < comparison["p_value"] <= 1
    assert comparison["difference"] == pytest.approx(report["retrievers"]["bm25"]["ndcg@10"] - report["retrievers"]["similarity"]["ndcg@10"])
