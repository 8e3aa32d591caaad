"""Every code block in docs/ runs: python blocks execute, toml blocks parse.

The pages run as a reader runs them: from the root of one fresh clone (a copy
of the tracked files), one page after another in that same checkout, each
page's blocks in order in one namespace. No page may change a tracked file
(another page's example, the quickstart's config …). docs/getting-started.md's
``$ ragloom ...`` commands then run in that checkout too, and the output the
page shows must be what they print. A ```toml block that declares a pipeline
(it has a ``[chunker]``, ``[embedder]``, ``[store]``, ``[retriever]``,
``[[sources]]`` … table) is validated with the installed components.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.config import TOP_LEVEL_KEYS, tomllib

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").rglob("*.md"))
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == language]


def _installed(component_tables: dict) -> bool:
    from ragloom.plugins import Registry

    registry = Registry()
    for stage in ("chunker", "embedder", "store", "retriever", "reranker"):
        table = component_tables.get(stage)
        if isinstance(table, dict) and "type" in table and table["type"] not in registry.names(stage):
            return False
    loaders = component_tables.get("loaders", {})
    ingest = component_tables.get("ingest", {})
    executor = ingest.get("executor", "local") if isinstance(ingest, dict) else "local"
    if executor != "local" and executor not in registry.names("executor"):
        return False  # e.g. ragloom-ray: validated in its own session
    return all(name in registry.names("loader") for name in loaders)


def test_docs_exist() -> None:
    names = {p.name for p in DOCS}
    assert {"getting-started.md", "configuration.md", "plugins.md", "hooks.md"} <= names


def _tracked_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but build and run products
        skip = {".git", ".venv", ".nox", "__pycache__", ".ragloom", ".pytest_cache"}
        return [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)]
    return [name for name in listed.decode().split("\0") if name and (REPO / name).is_file()]


def _digests(root: Path, names: list[str]) -> dict[str, str]:
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() if (root / name).exists() else "" for name in names}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One fresh checkout (the tracked files) shared by every page, in order."""
    root = tmp_path_factory.mktemp("clone")
    names = _tracked_files()
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    return root, names


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO / "docs")))
def test_python_blocks_run(page: Path, checkout: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    code_blocks = blocks(page, "python")
    if not code_blocks:
        return
    root, names = checkout
    before = _digests(root, names)
    monkeypatch.chdir(root)
    monkeypatch.setenv("RAGLOOM_DOCS_TEST", "1")
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, code in code_blocks:
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"{page.relative_to(REPO)} block at line {line} failed: {type(exc).__name__}: {exc}")
    for value in namespace.values():  # close what the page opened (DuckDB files, servers' pipelines)
        if hasattr(value, "close") and type(value).__name__ in ("Pipeline", "DuckDBStore"):
            value.close()
    changed = sorted(name for name, digest in _digests(root, names).items() if digest != before[name])
    assert not changed, f"{page.name} changed tracked files of the clone: {changed}"


def _console_steps(page: Path) -> list[tuple[str, list[str]]]:
    """``$ command`` lines of the page's console blocks with the output lines shown under each."""
    steps: list[tuple[str, list[str]]] = []
    for _, block in blocks(page, "console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
    return steps


def test_getting_started_commands_print_what_the_page_shows(checkout: tuple[Path, list[str]]) -> None:
    root, _ = checkout
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "TERM": "dumb", "COLUMNS": "200"}
    for command, shown in _console_steps(REPO / "docs" / "getting-started.md"):
        words = shlex.split(command.split("#")[0])
        if words[0] != "ragloom":
            continue  # the install steps: this environment is installed already
        ran = subprocess.run([sys.executable, "-m", "ragloom.cli", *words[1:]], cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, f"{command}: {ran.stderr}"
        printed = ran.stdout.splitlines()
        for i, expected in enumerate(shown):
            if expected.strip() == "...":
                break
            if re.match(r"\d+\. \[", expected):  # a ranked result: the source and span must match, the score may move
                assert expected.split("] ", 1)[1] == printed[i].split("] ", 1)[1], command
            else:
                assert printed[i] == expected, command


def test_readme_python_blocks_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the README's examples use repository paths; they only read
    namespace: dict = {"__name__": "docs_readme"}
    for line, code in blocks(REPO / "README.md", "python"):
        exec(compile(code, f"README.md:{line}", "exec"), namespace)


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO / "docs")))
def test_toml_blocks_parse_and_validate(page: Path, tmp_path: Path) -> None:
    from ragloom import PipelineConfig

    for line, code in blocks(page, "toml"):
        try:
            data = tomllib.loads(code)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"{page.name} toml block at line {line}: {exc}")
        is_pipeline = data and set(data) <= set(TOP_LEVEL_KEYS) and "project" not in data
        if is_pipeline and _installed(data):
            PipelineConfig.from_dict(data, base_dir=tmp_path)
