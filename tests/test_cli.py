"""The `ragloom` command end to end, in subprocesses, on a persistent DuckDB store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def ragloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.fixture
def project(tmp_path: Path, corpus: Path) -> Path:
    (tmp_path / "ragloom.toml").write_text(
        """
namespace = "cli"

[[sources]]
path = "corpus"

[chunker]
type = "recursive"
size = 400
overlap = 40

[store]
type = "duckdb"
path = "store/kb.duckdb"
""",
        encoding="utf-8",
    )
    return tmp_path


def test_ingest_query_remove_stats_plugins(project: Path) -> None:
    first = ragloom("ingest", "--json", cwd=project)
    assert first.returncode == 0, first.stderr
    ingested = json.loads(first.stdout)
    assert ingested["documents"] == 12 and ingested["chunks"] > 12 and ingested["failed"] == []

    again = ragloom("ingest", cwd=project)
    assert again.returncode == 0 and "12 documents unchanged" in again.stdout
    assert "\x1b[" not in again.stderr  # no progress bar when not on a terminal

    found = ragloom("query", "How do I reset the lamp to factory settings?", "--json", "-k", "3", cwd=project)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert len(results) == 3 and results[0]["rank"] == 1
    assert results[0]["source"].endswith("troubleshooting.md")
    start, end = results[0]["span"]
    assert end - start == len(results[0]["text"])

    human = ragloom("query", "warranty", cwd=project)
    assert human.returncode == 0 and "1. [" in human.stdout and "corpus/" in human.stdout

    faq = str((project / "corpus" / "faq.md").resolve())
    removed = ragloom("remove", "corpus/faq.md", "--json", cwd=project)
    assert removed.returncode == 0 and json.loads(removed.stdout)["removed"]["corpus/faq.md"] > 0

    stats = json.loads(ragloom("stats", "--json", cwd=project).stdout)
    assert stats["sources"] == 11 and stats["namespace"] == "cli"

    filtered = json.loads(ragloom("query", "lamp", "--json", "--filter", json.dumps({"source": faq}), cwd=project).stdout)
    assert filtered["results"] == []

    listed = ragloom("plugins", cwd=project)
    assert listed.returncode == 0
    assert any(line.split()[:3] == ["store", "duckdb", "ragloom-duckdb"] for line in listed.stdout.splitlines())


def test_errors_are_one_line_without_traceback(project: Path) -> None:
    (project / "bad.toml").write_text('[chunker]\nsize = "big"\n', encoding="utf-8")
    bad = ragloom("-c", "bad.toml", "stats", cwd=project)
    assert bad.returncode == 1
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    assert "invalid value 'big' @ $.chunker.size" in bad.stderr

    missing = ragloom("-c", "absent.toml", "ingest", cwd=project)
    assert missing.returncode == 1 and "config file not found: absent.toml" in missing.stderr

    no_source = ragloom("ingest", "corpus/absent.md", cwd=project)
    assert no_source.returncode == 1 and "absent.md" in no_source.stderr and "Traceback" not in no_source.stderr

    bad_filter = ragloom("query", "lamp", "--filter", "{oops", cwd=project)
    assert bad_filter.returncode == 1 and "--filter is not valid JSON" in bad_filter.stderr

    bad_operator = ragloom("query", "lamp", "--filter", '{"a": {"$like": 1}}', cwd=project)
    assert bad_operator.returncode == 1 and "unknown operator '$like'" in bad_operator.stderr

    usage = ragloom("frobnicate", cwd=project)
    assert usage.returncode == 2


def test_ingest_with_failures_reports_them(project: Path) -> None:
    (project / "corpus" / "broken.md").write_bytes(b"---\ntitle: [x\n---\n")
    (project / "corpus" / "image.png").write_bytes(b"\x89PNG")
    toml = (project / "ragloom.toml").read_text(encoding="utf-8")
    (project / "ragloom.toml").write_text(toml + '\n[ingest]\non_error = "skip"\n', encoding="utf-8")
    ran = ragloom("ingest", cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert "failed: corpus/broken.md: invalid YAML frontmatter" in ran.stdout
    assert "skipped (no loader for this file type): corpus/image.png" in ran.stdout


def test_progress_bar_only_when_asked_or_on_a_terminal(project: Path) -> None:
    shown = ragloom("ingest", "--progress", "always", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "12/12" in shown.stderr and "ingest" in shown.stderr
    quiet = ragloom("ingest", cwd=project)  # stderr is a pipe here: no bar
    assert quiet.stderr == ""


def test_tag_over_an_unchanged_stored_corpus_without_embedding(project: Path) -> None:
    """`ingest --tag beta` over a stored corpus tags it; a plain ingest drops the tag; nothing is embedded."""
    assert ragloom("ingest", cwd=project).returncode == 0

    def ingest(*extra: str) -> dict:  # type: ignore[type-arg]
        done = ragloom("ingest", "--json", *extra, cwd=project)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def tagged() -> int:
        found = ragloom("query", "lamp", "--json", "-k", "50", "--filter", '{"tags": "beta"}', cwd=project)
        assert found.returncode == 0, found.stderr
        return len(json.loads(found.stdout)["results"])

    result = ingest("--tag", "beta")
    assert result["embedded"] == 0 and result["updated"] == 12 and result["unchanged"] == 0
    assert tagged() > 0
    result = ingest()
    assert result["embedded"] == 0 and result["updated"] == 12
    assert tagged() == 0
    result = ingest()
    assert result["embedded"] == 0 and result["updated"] == 0 and result["unchanged_sources"] == 12
