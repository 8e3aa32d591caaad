"""Every code block in docs/ runs: python blocks execute, toml blocks parse.

Blocks of one page run in order in one namespace, in a fresh folder holding a
copy of the quickstart corpus as ``./corpus``. A ```toml block that declares a
pipeline (it has a ``[chunker]``, ``[embedder]``, ``[store]``, ``[retriever]``,
``[[sources]]`` … table) is validated with the installed components.
"""

from __future__ import annotations

import re
import shutil
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
    return all(name in registry.names("loader") for name in loaders)


def test_docs_exist() -> None:
    names = {p.name for p in DOCS}
    assert {"getting-started.md", "configuration.md", "plugins.md", "hooks.md"} <= names


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO / "docs")))
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code_blocks = blocks(page, "python")
    if not code_blocks:
        return
    shutil.copytree(REPO / "examples" / "quickstart" / "corpus", tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGLOOM_DOCS_TEST", "1")
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, code in code_blocks:
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"{page.relative_to(REPO)} block at line {line} failed: {type(exc).__name__}: {exc}")


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
