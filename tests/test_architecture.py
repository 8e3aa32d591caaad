"""The architecture rules that are checked: public modules, complete exports, no import-time state."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ragloom
import ragloom.plugin
import ragloom.testing

REPO = Path(__file__).resolve().parents[1]
#: Code written against ragloom as a third party writes it: bundled plugins and the example plugin.
PLUGIN_CODE = sorted(REPO.glob("plugins/*/src")) + [REPO / "examples" / "plugin"]


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def private_imports(source: str, filename: str = "<source>") -> list[str]:
    """``file:line module`` for every import of a ragloom module outside ragloom.plugin.PUBLIC_MODULES."""
    problems = []
    for node in ast.walk(ast.parse(source, filename)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            if node.module == "ragloom":  # ``from ragloom import filters`` imports a module too
                modules += [f"ragloom.{a.name}" for a in node.names if _is_module(f"ragloom.{a.name}")]
        for module in modules:
            if (module == "ragloom" or module.startswith("ragloom.")) and module not in ragloom.plugin.PUBLIC_MODULES:
                problems.append(f"{filename}:{node.lineno} {module}")
    return problems


def test_the_checker_finds_private_imports() -> None:
    code = "import ragloom.filters\nfrom ragloom.keyword import BM25Index\nfrom ragloom import filters, hookimpl\nfrom ragloom_duckdb import x\n"
    assert private_imports(code) == ["<source>:1 ragloom.filters", "<source>:2 ragloom.keyword", "<source>:3 ragloom.filters"]
    assert private_imports("from ragloom.plugin import hookimpl\nfrom ragloom.testing import StoreContract\nimport ragloom\n") == []


@pytest.mark.parametrize("root", PLUGIN_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_plugins_import_only_public_modules(root: Path) -> None:
    files = sorted(root.rglob("*.py"))
    assert files, f"no Python files under {root}"
    problems = [p for f in files for p in private_imports(f.read_text(encoding="utf-8"), str(f.relative_to(REPO)))]
    assert not problems, "plugins may import only " + ", ".join(ragloom.plugin.PUBLIC_MODULES) + ":\n" + "\n".join(problems)


@pytest.mark.parametrize("module", [ragloom, ragloom.plugin, ragloom.testing], ids=lambda m: m.__name__)
def test_all_is_sorted_and_complete(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert names == sorted(names), f"{module.__name__}.__all__ is not sorted"  # type: ignore[attr-defined]
    assert len(set(names)) == len(names)
    public = {n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))}
    assert public == set(names), f"exported but not in __all__: {public - set(names)}; in __all__ only: {set(names) - public}"


def test_the_top_level_carries_the_whole_plugin_surface() -> None:
    assert set(ragloom.plugin.__all__) <= set(ragloom.__all__)
    for name in ragloom.plugin.__all__:
        assert getattr(ragloom, name) is getattr(ragloom.plugin, name), name


def test_every_plugin_name_is_documented() -> None:
    docs = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    missing = [name for name in ragloom.plugin.__all__ if not re.search(rf"`{name}[`(\[]", docs)]
    assert not missing, f"docs/plugins.md does not describe {missing}"


_FINGERPRINT = """
import importlib, json, random, sys
from ragloom.structuring import converter

def fingerprint():
    d = converter._structure_func
    pairs = [getattr(p[0], "__qualname__", repr(p[0])) for p in d._function_dispatch._handler_pairs]
    direct = sorted(repr(k) for k in d._direct_dispatch)
    single = sorted(repr(k) for k in d._single_dispatch.registry)
    return [pairs, direct, single]

before = fingerprint()
names = json.loads(sys.argv[1])
random.Random(int(sys.argv[2])).shuffle(names)
for name in names:
    importlib.import_module(name)
print(json.dumps({"before": before, "after": fingerprint()}))
"""


def _all_modules() -> list[str]:
    names = ["ragloom"]
    for info in pkgutil.walk_packages(ragloom.__path__, "ragloom."):
        if info.name.startswith("ragloom.testing") or info.name == "ragloom.__main__":
            continue  # the test helpers need pytest; they are imported by tests, not by ragloom
        names.append(info.name)
    return names


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_importing_modules_in_any_order_leaves_the_converter_alone(seed: int) -> None:
    modules = _all_modules()
    assert "ragloom.retrievers.mmr" in modules and "ragloom.config" in modules
    ran = subprocess.run(
        [sys.executable, "-c", _FINGERPRINT, json.dumps(modules), str(seed)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["before"] == out["after"], "importing a module changed the shared cattrs converter"


def test_mmr_accepts_its_toml_spelling_without_touching_the_converter() -> None:
    from ragloom.errors import ConfigError
    from ragloom.plugins import Registry

    registry = Registry()
    assert registry.structure_config("retriever", "mmr", {"lambda": 0.2}).lambda_mult == 0.2
    assert registry.structure_config("retriever", "mmr", {"lambda_mult": 0.3}).lambda_mult == 0.3
    with pytest.raises(ConfigError, match="give 'lambda' or 'lambda_mult', not both"):
        registry.structure_config("retriever", "mmr", {"lambda": 0.2, "lambda_mult": 0.3})


def test_the_structuring_module_is_a_leaf() -> None:
    tree = ast.parse((REPO / "core" / "src" / "ragloom" / "structuring.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("ragloom")}
    assert imported == {"ragloom.errors"}


def test_sibling_stages_do_not_import_each_other() -> None:
    """A stage's components share helper modules, never each other (hybrid -> bm25, semantic -> sentence, loaders -> text)."""
    pairs: dict[str, str] = {
        "retrievers/hybrid.py": "ragloom.retrievers.bm25",
        "chunkers/semantic.py": "ragloom.chunkers.sentence",
        "chunkers/sentence.py": "ragloom.chunkers.recursive",
        "chunkers/markdown.py": "ragloom.chunkers.recursive",
        **{f"loaders/{name}.py": "ragloom.loaders.text" for name in ("csvfile", "html", "json", "markdown", "pdf")},
    }
    src = REPO / "core" / "src" / "ragloom"
    for path, forbidden in pairs.items():
        tree = ast.parse((src / path).read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert forbidden not in imported, f"{path} imports {forbidden}"


#: What the user docs may import: the public modules plus the stage packages and evaluation (applications only).
APPLICATION_MODULES = (
    *ragloom.plugin.PUBLIC_MODULES,
    "ragloom.loaders",
    "ragloom.chunkers",
    "ragloom.embedders",
    "ragloom.stores",
    "ragloom.retrievers",
    "ragloom.rerankers",
    "ragloom.evaluation",
    "ragloom.tools",
    "ragloom.tools_export",
)


def test_the_docs_import_only_public_and_application_modules() -> None:
    problems = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                match = re.match(r"\s*(?:from|import) (ragloom(?:\.\w+)*)", line)
                if match and match.group(1) not in APPLICATION_MODULES:
                    problems.append(f"{page.name}: {line.strip()}")
    assert not problems, "\n".join(problems)
