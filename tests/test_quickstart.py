"""The quickstart pipeline as shipped: every example question finds the file that answers it."""

from __future__ import annotations

import re
from pathlib import Path

from ragloom import Pipeline, PipelineConfig
from ragloom.config import tomllib

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def test_example_questions_find_their_answers(tmp_path: Path) -> None:
    data = tomllib.loads((QUICKSTART / "ragloom.toml").read_text(encoding="utf-8"))
    data["store"]["path"] = str(tmp_path / "quickstart.duckdb")  # never write into the repository
    pipeline = Pipeline.from_config(PipelineConfig.from_dict(data, base_dir=QUICKSTART))
    result = pipeline.ingest()
    assert result.documents == 12 and not result.failed and not result.skipped
    questions = re.findall(r"^- (.+?) \((\S+)\)$", (QUICKSTART / "QUERIES.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert len(questions) == 8
    misses = []
    for question, answer_file in questions:
        top = [Path(hit.source).name for hit in pipeline.query(question, top_k=3)]
        if answer_file not in top:
            misses.append((question, answer_file, top))
    assert not misses, misses
    pipeline.close()
