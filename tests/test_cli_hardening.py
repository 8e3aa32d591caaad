"""Hostile configs and arguments through the real ``ragloom`` command: one error line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RAGLOOM = [sys.executable, "-m", "ragloom.cli"]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RAGLOOM, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)


def _assert_one_line_error(done: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragloom: error: "), done.stderr
    assert fragment in lines[0], lines[0]


def _config(tmp_path: Path, text: str) -> str:
    (tmp_path / "ragloom.toml").write_text(text)
    return "ragloom.toml"


CASES = [
    ("a = " + "[" * 3000 + "1" + "]" * 3000 + "\n", ["stats"], "nested too deeply"),
    ('[store]\ntype = "duckdb"\npath = "/proc/x/kb.duckdb"\n', ["stats"], "cannot create the folder"),
    ('[store]\ntype = "duckdb"\npath = "afile/kb.duckdb"\n', ["stats"], "cannot create the folder"),
    ('[store]\ntype = "duckdb"\npath = "a\\u0000b.duckdb"\n', ["stats"], "NUL byte"),
    ('[[sources]]\npath = "a\\u0000b"\n', ["ingest"], "NUL byte"),
    ("", ["query", "x", "--filter", "[" * 5000 + "]" * 5000], "nested too deeply"),
    ("", ["query", "x", "--filter", '{"$and": [' * 5000 + "{}" + "]}" * 5000], "nested too deeply"),
    ("", ["query", "x", "--filter", '{"a": ' + "9" * 5000 + "}"], "--filter"),
    ("", ["ingest", "a\x01b.txt"], "no such file"),
]


@pytest.mark.parametrize(("toml", "args", "fragment"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_hostile_config_and_arguments_print_one_line(tmp_path: Path, toml: str, args: list[str], fragment: str) -> None:
    (tmp_path / "afile").write_text("a file where a folder should be")
    _config(tmp_path, toml)
    _assert_one_line_error(_run(tmp_path, *args), fragment)


def test_a_file_name_that_is_not_utf8_prints_escaped(tmp_path: Path) -> None:
    _config(tmp_path, '[ingest]\non_error = "skip"\n')
    folder = tmp_path / "docs"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "w") as handle:
        handle.write("x\n")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.unknown"), "w") as handle:
        handle.write("x\n")
    done = _run(tmp_path, "ingest", "docs")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "failed: docs/caf\\xe9.txt: file name is not valid Unicode" in done.stdout
    assert "skipped (no loader for this file type): docs/caf\\udce9.unknown" in done.stdout
    assert json.loads(_run(tmp_path, "stats", "--json").stdout)["sources"] == 0
