"""What a newcomer types: paths against the working directory, sources, remove, namespaces (CLI in subprocesses)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from test_cli import ragloom

TOML = """
namespace = "kb"

[[sources]]
path = "corpus"

[store]
type = "duckdb"
path = "store/kb.duckdb"
"""


@pytest.fixture
def workdir(tmp_path: Path, corpus: Path) -> Path:
    """``tmp/project/{ragloom.toml,corpus}``; the commands run from ``tmp``, as in docs/getting-started.md."""
    project = tmp_path / "project"
    project.mkdir()
    corpus.rename(project / "corpus")
    (project / "ragloom.toml").write_text(TOML, encoding="utf-8")
    assert ragloom("-c", "project/ragloom.toml", "ingest", cwd=tmp_path).returncode == 0
    return tmp_path


def test_path_arguments_resolve_against_the_working_directory(workdir: Path) -> None:
    removed = ragloom("-c", "project/ragloom.toml", "remove", "project/corpus/faq.md", cwd=workdir)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("removed ") and "project/corpus/faq.md" in removed.stdout
    again = ragloom("-c", "project/ragloom.toml", "ingest", "project/corpus/faq.md", "--json", cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["documents"] == 1 and json.loads(again.stdout)["chunks"] > 0


def test_query_prints_sources_that_remove_accepts(workdir: Path) -> None:
    (workdir / "project" / "corpus" / "a note.md").write_text("# Note\n\nThe zebra-striped lampshade is sold out.\n")
    assert ragloom("-c", "project/ragloom.toml", "ingest", cwd=workdir).returncode == 0
    found = ragloom("-c", "project/ragloom.toml", "query", "zebra-striped lampshade", "-k", "1", cwd=workdir)
    header = found.stdout.splitlines()[0]
    printed = re.match(r"1\. \[[\d.]+\] (.+) \[\d+:\d+\]", header).group(1)
    assert printed == "'project/corpus/a note.md'"
    removed = ragloom("-c", "project/ragloom.toml", "remove", *shlex.split(printed), cwd=workdir)
    assert removed.returncode == 0 and "removed 1 chunks" in removed.stdout


def test_remove_a_directory_and_what_is_not_stored(workdir: Path) -> None:
    everything = ragloom("-c", "project/ragloom.toml", "remove", "project/corpus", "--json", cwd=workdir)
    assert everything.returncode == 0
    assert len(json.loads(everything.stdout)["removed"]) == 12
    assert ragloom("-c", "project/ragloom.toml", "sources", "--json", cwd=workdir).stdout.strip() == "[]"
    absent = ragloom("-c", "project/ragloom.toml", "remove", "project/corpus/faq.md", cwd=workdir)
    assert absent.returncode == 1 and "nothing stored for project/corpus/faq.md" in absent.stderr
    absent_json = ragloom("-c", "project/ragloom.toml", "remove", "nowhere.md", "--json", cwd=workdir)
    assert absent_json.returncode == 1 and json.loads(absent_json.stdout) == {"removed": {}, "not_stored": ["nowhere.md"]}
    error = json.loads(absent_json.stderr.splitlines()[0])  # exit 1 under --json: the error as one JSON object on stderr
    assert error["type"] == "StoreError" and error["source"] == "nowhere.md" and "nothing stored for nowhere.md" in error["error"]


def test_sources_lists_what_is_stored_with_counts(workdir: Path) -> None:
    listed = json.loads(ragloom("-c", "project/ragloom.toml", "sources", "--json", cwd=workdir).stdout)
    stats = json.loads(ragloom("-c", "project/ragloom.toml", "stats", "--json", cwd=workdir).stdout)
    assert len(listed) == 12 and sum(row["chunks"] for row in listed) == stats["chunks"]
    human = ragloom("-c", "project/ragloom.toml", "sources", cwd=workdir).stdout.splitlines()
    assert human[-1] == "12 sources in namespace 'kb'" and human[0].split()[-1] == "project/corpus/circadian-schedule.md"


def test_namespace_works_on_every_command(workdir: Path) -> None:
    def run(*args: str) -> dict | list:
        ran = ragloom("-c", "project/ragloom.toml", *args, "--json", cwd=workdir)
        assert ran.returncode == 0, ran.stderr
        return json.loads(ran.stdout)

    assert run("ingest", "project/corpus/faq.md", "--namespace", "other")["documents"] == 1
    assert [row["source"] for row in run("sources", "--namespace", "other")] == [str(workdir / "project/corpus/faq.md")]
    assert run("stats", "--namespace", "other")["chunks"] == run("sources", "--namespace", "other")[0]["chunks"]
    assert {r["source"] for r in run("query", "lamp", "--namespace", "other")["results"]} == {str(workdir / "project/corpus/faq.md")}
    assert len(run("sources")) == 12  # the config's namespace is untouched
    run("--namespace", "other", "remove", "project/corpus/faq.md")  # the global form
    assert run("sources", "--namespace", "other") == []
    assert ragloom("plugins", "--namespace", "other", cwd=workdir).returncode == 0


def test_remove_takes_a_stored_id_and_never_a_path_relative_to_the_config(workdir: Path) -> None:
    from ragloom import Document, Pipeline

    with Pipeline.from_toml(workdir / "project" / "ragloom.toml") as pipeline:
        pipeline.ingest_documents([Document.create("Ticket: the lamp flickers.", "ticket:42")])
    by_id = ragloom("-c", "project/ragloom.toml", "remove", "ticket:42", cwd=workdir)
    assert by_id.returncode == 0 and by_id.stdout == "removed 1 chunks of ticket:42\n"
    # corpus/faq.md exists beside the config, not in the working directory: nothing to remove here
    relative_to_config = ragloom("-c", "project/ragloom.toml", "remove", "corpus/faq.md", cwd=workdir)
    assert relative_to_config.returncode == 1 and "nothing stored for corpus/faq.md" in relative_to_config.stderr
