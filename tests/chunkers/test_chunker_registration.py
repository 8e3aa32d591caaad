"""Every chunker: registered through the hook, configurable from TOML and Python, fingerprinted."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import attrs
import pytest
from chunker_checks import MINILM_TOKENIZER
from helpers import CountingEmbedder

from ragloom import ConfigError, Pipeline
from ragloom.config import PipelineConfig
from ragloom.plugins import Registry
from ragloom.stores.memory import MemoryStore

CHUNKERS = ["fixed", "recursive", "sentence", "markdown", "semantic"]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry()


def test_every_chunker_is_registered_by_the_default_plugin(registry: Registry) -> None:
    assert set(CHUNKERS) <= set(registry.names("chunker"))
    for name in CHUNKERS:
        info = registry.get("chunker", name)
        assert info.plugin == "ragloom.chunkers.plugin" and info.config is not None and info.description


@pytest.mark.parametrize("name", ["sentence", "markdown", "recursive", "semantic"])
def test_toml_and_builder_build_the_same_chunker(tmp_path: Path, registry: Registry, name: str) -> None:
    option = ("max_size", 800) if name == "semantic" else ("size", 800)
    path = tmp_path / "ragloom.toml"
    path.write_text(f'[chunker]\ntype = "{name}"\n{option[0]} = {option[1]}\n', encoding="utf-8")
    from_toml = Pipeline.from_toml(path, registry=registry)
    built = Pipeline.builder(registry=registry).chunker(name, **{option[0]: option[1]}).build()
    assert from_toml.chunker.fingerprint == built.chunker.fingerprint
    assert getattr(built.chunker.config, option[0]) == 800
    assert PipelineConfig.from_toml(path, registry=registry).chunker == built.config.chunker


def test_token_sizing_from_toml_resolves_the_tokenizer_next_to_the_config(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "tok.json").write_bytes(MINILM_TOKENIZER.read_bytes())
    path = tmp_path / "ragloom.toml"
    path.write_text('[chunker]\ntype = "sentence"\nsize = 128\nsize_unit = "tokens"\ntokenizer = "tok.json"\n', encoding="utf-8")
    pipeline = Pipeline.from_toml(path, registry=registry)
    assert pipeline.chunker.config.size_unit == "tokens" and "tokenizer=sha256:" in pipeline.chunker.fingerprint


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("sentence", {"size": 10, "overlap": 10}, "overlap"),
        ("recursive", {"size_unit": "words"}, "size_unit"),
        ("markdown", {"sise": 10}, "sise"),
        ("semantic", {"breakpoint": "median"}, "breakpoint"),
        ("sentence", {"size_unit": "tokens"}, "tokenizer"),
    ],
)
def test_bad_options_are_config_errors(registry: Registry, name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Pipeline.builder(registry=registry).chunker(name, **options).build()


def _changed(field: attrs.Attribute, value: Any) -> Any:  # type: ignore[type-arg]
    """Another valid value for one option."""
    if field.name == "size_unit":
        return "tokens"
    if field.name == "tokenizer":
        return str(MINILM_TOKENIZER)
    if field.name == "breakpoint":
        return "threshold"
    if field.name == "separators":
        return ("\n", " ")
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if field.name != "size" else value + 100
    if isinstance(value, float):
        return value / 2
    raise AssertionError(f"no alternative value for {field.name}")


def _options(name: str, field: attrs.Attribute, value: Any) -> dict[str, Any]:  # type: ignore[type-arg]
    options = {field.name: value}
    if field.name == "size_unit":
        options["tokenizer"] = str(MINILM_TOKENIZER)
    if name in ("fixed", "recursive", "sentence", "markdown") and field.name == "overlap":
        options["size"] = 1000
    return options


def _all_fields() -> list[tuple[str, str]]:
    registry = Registry()
    return [(name, f.name) for name in CHUNKERS for f in attrs.fields(registry.get("chunker", name).config)]


@pytest.mark.parametrize(("name", "field_name"), _all_fields())
def test_every_option_changes_the_fingerprint(registry: Registry, name: str, field_name: str) -> None:
    info = registry.get("chunker", name)
    field = next(f for f in attrs.fields(info.config) if f.name == field_name)
    default = field.default.factory() if isinstance(field.default, attrs.Factory) else field.default  # type: ignore[misc]
    context = registry_context(registry)
    base = registry.build("chunker", name, {}, context)
    changed = registry.build("chunker", name, _options(name, field, _changed(field, default)), context)
    assert base.fingerprint != changed.fingerprint, f"{name}.{field_name} does not change the fingerprint"
    assert typing.get_type_hints(info.config)  # every option is typed for TOML


def registry_context(registry: Registry):  # type: ignore[no-untyped-def]
    from ragloom.plugins import BuildContext

    return BuildContext(registry=registry, embedder=CountingEmbedder(dim=64))


@pytest.mark.parametrize(
    ("name", "options", "changed"),
    [
        ("fixed", {"size": 300}, {"size": 300, "overlap": 30}),
        ("recursive", {"size": 300}, {"size": 300, "separators": ["\n", " "]}),
        ("sentence", {"size": 300}, {"size": 300, "size_unit": "tokens", "tokenizer": str(MINILM_TOKENIZER)}),
        ("markdown", {"size": 300}, {"size": 400}),
        ("semantic", {"max_size": 400}, {"max_size": 400, "breakpoint_percentile": 80.0}),
    ],
)
def test_changing_an_option_re_embeds_on_the_next_ingest(
    corpus: Path, registry: Registry, name: str, options: dict[str, Any], changed: dict[str, Any]
) -> None:
    store = MemoryStore()

    def pipeline(chunker_options: dict[str, Any]) -> Pipeline:
        return Pipeline.builder(registry=registry).chunker(name, **chunker_options).embedder("hash", dim=64).store(store).build()

    first = pipeline(options).ingest(corpus)
    assert first.embedded > 0 and not first.failed
    same = pipeline(options).ingest(corpus)
    assert same.embedded == 0 and same.unchanged == first.documents
    again = pipeline(changed).ingest(corpus)
    assert again.embedded > 0 and again.unchanged == 0
    assert pipeline(changed).ingest(corpus).embedded == 0
