"""Plugin manager and registry: entry points, collisions, env controls, hook surface."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plugins import colliding, misspelled, shouting
from ragloom import ConfigError, Pipeline, PluginError, hookspecs
from ragloom.plugins import DEFAULT_PLUGINS, STAGES, Registry, make_plugin_manager

REPO = Path(__file__).resolve().parents[1]


def test_every_builtin_is_registered_through_the_hooks() -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False))
    by_plugin = {(info.stage, info.name): info.plugin for info in registry.all()}
    assert by_plugin[("chunker", "recursive")] == "ragloom.chunkers.plugin"
    assert by_plugin[("embedder", "hash")] == "ragloom.embedders.plugin"
    assert by_plugin[("store", "memory")] == "ragloom.stores.plugin"
    assert by_plugin[("retriever", "similarity")] == "ragloom.retrievers.plugin"
    assert {"text", "markdown", "auto"} <= set(registry.names("loader"))
    assert {plugin for plugin in by_plugin.values()} <= set(DEFAULT_PLUGINS)


def test_component_info_names_distribution_and_version() -> None:
    info = Registry().get("chunker", "recursive")
    assert info.distribution == "ragloom"
    assert re.match(r"\d+\.\d+", info.version)
    assert info.description.startswith("Separator-aware")


def test_a_registered_plugin_builds_with_config_and_context(tmp_path: Path) -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[shouting]))
    pipeline = Pipeline.builder(registry=registry).base_dir(tmp_path).embedder("shout", dim=8).build()
    assert pipeline.embedder.dim == 8 and pipeline.embedder.base_dir == tmp_path
    with pytest.raises(ConfigError, match="unknown key 'dims'"):
        Pipeline.builder(registry=registry).embedder("shout", dims=8)


def test_name_collision_fails_naming_both_plugins() -> None:
    with pytest.raises(PluginError) as info:
        Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[colliding]))
    message = str(info.value)
    assert "chunker 'recursive' is registered twice" in message
    assert "ragloom.chunkers.plugin" in message and "colliding" in message


def test_misspelled_hook_is_a_startup_error() -> None:
    with pytest.raises(PluginError, match="register_chunker"):
        make_plugin_manager(load_entry_points=False, extra_plugins=[misspelled])


def test_every_hookspec_is_documented_with_its_signature_and_tested() -> None:
    docs = (REPO / "docs" / "hooks.md").read_text(encoding="utf-8")
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").rglob("*.py"))
    specs = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("register_")]
    assert sorted(specs) == sorted(f"register_{stage}s" for stage in STAGES)
    for name in specs:
        signature = f"{name}{inspect.signature(getattr(hookspecs, name))}"
        assert signature in docs, f"docs/hooks.md lacks the signature {signature}"
        assert f"def {name}(" in tests, f"no test plugin implements {name}"


@pytest.fixture(scope="module")
def installed_example_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin package, really pip-installed into a private target folder."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target), str(REPO / "examples" / "plugin")],
        check=True,
        capture_output=True,
    )
    return target


def _run(args: list[str], site: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    environment = {**os.environ, "PYTHONPATH": str(site), **env}
    return subprocess.run([sys.executable, "-m", "ragloom.cli", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120)


def test_installed_plugin_is_listed_and_used_from_toml(installed_example_plugin: Path, tmp_path: Path, corpus: Path) -> None:
    import json

    listed = _run(["plugins", "--json"], installed_example_plugin, tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {(r["stage"], r["name"]): r for r in json.loads(listed.stdout)}
    row = rows[("chunker", "paragraphs")]
    assert (row["distribution"], row["version"], row["plugin"]) == ("ragloom-paragraphs", "0.3.1", "paragraphs")

    config = tmp_path / "ragloom.toml"
    config.write_text(
        f'[[sources]]\npath = "{corpus.as_posix()}"\n[chunker]\ntype = "paragraphs"\nmax_chars = 400\n'
        '[embedder]\ndim = 64\n',
        encoding="utf-8",
    )
    script = (
        "import json, ragloom\n"
        "p = ragloom.Pipeline.from_toml('ragloom.toml')\n"
        "r = p.ingest()\n"
        "hits = p.query('warranty', top_k=50)\n"
        "print(json.dumps({'chunks': r.chunks, 'fp': p.chunker.fingerprint, 'max': max(len(h.text) for h in hits)}))\n"
    )
    import os

    ran = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed_example_plugin)}, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["chunks"] > 12 and out["fp"].startswith("paragraphs:")


def test_disable_and_load_env_vars(installed_example_plugin: Path, tmp_path: Path) -> None:
    import json

    disabled = _run(["plugins", "--json"], installed_example_plugin, tmp_path, RAGLOOM_DISABLE_PLUGINS="paragraphs")
    assert ("chunker", "paragraphs") not in {(r["stage"], r["name"]) for r in json.loads(disabled.stdout)}
    only_none = _run(["plugins", "--json"], installed_example_plugin, tmp_path, RAGLOOM_LOAD_PLUGINS="")
    assert {r["distribution"] for r in json.loads(only_none.stdout)} == {"ragloom"}
    only = _run(["plugins", "--json"], installed_example_plugin, tmp_path, RAGLOOM_LOAD_PLUGINS="paragraphs")
    assert {r["distribution"] for r in json.loads(only.stdout)} == {"ragloom", "ragloom-paragraphs"}
    traced = _run(["plugins"], installed_example_plugin, tmp_path, RAGLOOM_TRACE_PLUGINS="1")
    assert "register_chunkers" in traced.stderr


def test_hybrid_description_names_its_default_fusion() -> None:
    from ragloom.plugins import Registry
    from ragloom.retrievers.hybrid import HybridConfig

    description = Registry().get("retriever", "hybrid").description
    assert f'"{HybridConfig().mode}", default' in description
