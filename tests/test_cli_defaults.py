"""Defaults and errors a newcomer meets on the command line (subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import ragloom

SOURCES = '[[sources]]\npath = "corpus"\n'


def test_without_a_store_the_cli_keeps_data_beside_the_config(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "ragloom.toml").write_text(SOURCES, encoding="utf-8")
    assert ragloom("ingest", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".ragloom" / "ragloom.duckdb").exists()
    found = ragloom("query", "How do I reset the lamp to factory settings?", "--json", cwd=tmp_path)  # a new process
    assert found.returncode == 0 and json.loads(found.stdout)["results"], found.stderr


def test_without_a_store_or_duckdb_the_cli_says_what_to_configure(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "ragloom.toml").write_text(SOURCES, encoding="utf-8")
    refused = ragloom("ingest", cwd=tmp_path, env={"RAGLOOM_DISABLE_PLUGINS": "duckdb"})
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "has no [store]" in refused.stderr and "install ragloom-duckdb" in refused.stderr


def test_memory_store_warns_and_the_hint_says_why_nothing_is_found(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "ragloom.toml").write_text(SOURCES + '[store]\ntype = "memory"\n', encoding="utf-8")
    ingested = ragloom("ingest", cwd=tmp_path)
    assert ingested.returncode == 0 and "memory store forgets everything" in ingested.stderr
    empty = ragloom("query", "lamp", cwd=tmp_path)
    assert empty.returncode == 0 and "memory store forgets everything" in empty.stdout
    assert "run `ragloom ingest`" not in empty.stdout


def test_no_results_hints_tell_empty_from_excluded(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "ragloom.toml").write_text(SOURCES + '[store]\ntype = "duckdb"\npath = "kb.duckdb"\n[retriever]\ntype = "similarity"\n', encoding="utf-8")
    assert "store holds nothing" in ragloom("query", "lamp", cwd=tmp_path).stdout
    assert ragloom("ingest", cwd=tmp_path).returncode == 0
    missing_key = json.loads(ragloom("query", "lamp", "--json", "--filter", '{"product_line": "x"}', cwd=tmp_path).stdout)
    assert missing_key["results"] == [] and "no stored chunk has the metadata key 'product_line'" in missing_key["hint"]
    excluded = ragloom("query", "lamp", "--filter", '{"source": "nowhere"}', cwd=tmp_path).stdout
    assert excluded.strip() == "no results: the filter excluded every stored chunk"
    threshold = ragloom("query", "lamp", "--threshold", "0.99", cwd=tmp_path).stdout
    assert "no result scored at least the threshold 0.99 (the best scored 0." in threshold


def test_top_k_of_zero_or_less_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "ragloom.toml").write_text('[store]\ntype = "memory"\n', encoding="utf-8")
    for k in ("0", "-5"):
        ran = ragloom("query", "lamp", "-k", k, cwd=tmp_path)
        assert ran.returncode == 1 and ran.stderr == f"ragloom: error: invalid value {k} @ top_k: expected an integer > 0\n"


def test_skipped_failures_exit_3_unless_allowed_and_json_errors(tmp_path: Path, corpus: Path) -> None:
    (corpus / "broken.md").write_bytes(b"---\ntitle: [x\n---\n")
    (tmp_path / "ragloom.toml").write_text(SOURCES + '[store]\ntype = "duckdb"\npath = "kb.duckdb"\n[ingest]\non_error = "skip"\n', encoding="utf-8")
    failed = ragloom("ingest", cwd=tmp_path)
    assert failed.returncode == 3 and "failed: corpus/broken.md" in failed.stdout and "--allow-failures" in failed.stderr
    assert ragloom("ingest", "--allow-failures", cwd=tmp_path).returncode == 0
    assert ragloom("ingest", "--json", cwd=tmp_path).returncode == 3

    (tmp_path / "ragloom.toml").write_text(SOURCES + '[store]\ntype = "duckdb"\npath = "kb.duckdb"\n', encoding="utf-8")
    loader = ragloom("ingest", "--json", cwd=tmp_path)
    assert loader.returncode == 1 and loader.stdout == ""
    error = json.loads(loader.stderr)
    assert error["type"] == "LoaderError" and error["source"] == str(corpus / "broken.md") and "invalid YAML" in error["error"]
    bad_filter = json.loads(ragloom("query", "lamp", "--json", "--filter", "{oops", cwd=tmp_path).stderr)
    assert bad_filter == {"error": bad_filter["error"], "type": "RagloomError", "source": None}
    assert bad_filter["error"].startswith("--filter is not valid JSON")
