"""The `ragloom` command end to end, in subprocesses, on a persistent DuckDB store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: what the output of these tests may depend on, set explicitly instead of inherited from the caller
TERMINAL_ENV = {"TERM": "xterm-256color", "COLUMNS": "200", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def ragloom(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **TERMINAL_ENV, **(env or {})},
    )


def ragloom_on_terminal(*args: str, cwd: Path, term: str) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal of type ``term``; return the exit code and what the terminal showed."""
    import pty

    leader, follower = pty.openpty()
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "ragloom.cli", *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=follower,
            timeout=180,
            env={**os.environ, **TERMINAL_ENV, "TERM": term},
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO once the terminal is drained and closed
                break
            if not data:
                break
            shown += data
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    return ran.returncode, shown.decode("utf-8", "replace")


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
    assert removed.returncode == 0 and json.loads(removed.stdout)["removed"][faq] > 0  # keyed by the stored source

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
    assert ran.returncode == 3, ran.stderr  # documented: sources failed (--allow-failures: 0)
    assert "failed: corpus/broken.md: invalid YAML frontmatter" in ran.stdout
    assert "skipped (no loader for this file type): corpus/image.png" in ran.stdout


@pytest.mark.parametrize("term", ["xterm-256color", "dumb", ""])
def test_progress_when_asked_in_any_terminal_type_as_plain_lines_into_a_pipe(project: Path, term: str) -> None:
    shown = ragloom("ingest", "--progress", "always", cwd=project, env={"TERM": term})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stderr.splitlines()
    assert len(lines) == 12 and lines[-1].startswith("ingest 12/12 corpus/")
    assert "\x1b[" not in shown.stderr  # a pipe or log file gets plain lines, whatever TERM says
    quiet = ragloom("ingest", cwd=project, env={"TERM": term})  # stderr is a pipe here: no progress
    assert quiet.stderr == ""


def test_progress_on_a_terminal_is_a_bar_or_plain_lines_on_a_dumb_one(project: Path) -> None:
    code, bar = ragloom_on_terminal("ingest", cwd=project, term="xterm-256color")
    assert code == 0 and "\x1b[" in bar and "12/12" in bar  # auto: a live bar on a terminal
    code, dumb = ragloom_on_terminal("ingest", "--progress", "always", cwd=project, term="dumb")
    assert code == 0 and "\x1b[" not in dumb and "ingest 12/12 corpus/" in dumb
    code, never = ragloom_on_terminal("ingest", "--progress", "never", cwd=project, term="xterm-256color")
    assert code == 0 and never == ""


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
