"""Config: TOML -> attrs through cattrs, with messages that name path, value and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import ConfigError, Pipeline, PipelineConfig, Secret
from ragloom.chunkers.recursive import RecursiveConfig
from ragloom.plugins import Registry


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ragloom.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, registry: Registry) -> str:
    with pytest.raises(ConfigError) as info:
        PipelineConfig.from_toml(write(tmp_path, text), registry=registry)
    return str(info.value)


def test_full_config_structures_into_component_configs(tmp_path: Path, registry: Registry) -> None:
    config = PipelineConfig.from_toml(
        write(
            tmp_path,
            """
namespace = "handbook"

[[sources]]
path = "docs"
tags = ["public"]

[loaders.markdown]
strip_frontmatter = false

[chunker]
type = "recursive"
size = 500
overlap = 50

[embedder]
type = "hash"
dim = 128

[retriever]
type = "similarity"
top_k = 3
filter = { category = "support" }

[ingest]
on_error = "skip"
""",
        ),
        registry=registry,
    )
    assert config.namespace == "handbook"
    assert config.sources[0].path == "docs" and config.sources[0].tags == ("public",)
    assert config.loaders["markdown"].strip_frontmatter is False
    assert config.chunker.type == "recursive"
    assert config.chunker.config == RecursiveConfig(size=500, overlap=50)
    assert config.embedder.config.dim == 128
    assert config.retriever.config.top_k == 3
    assert config.ingest.on_error == "skip"
    assert config.base_dir == tmp_path.resolve()
    assert config.store.type == "memory"  # defaults fill the rest


def test_wrong_type_names_path_value_and_expectation(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, '[chunker]\ntype = "recursive"\nsize = "big"\n', registry)
    assert "ragloom.toml" in message
    assert "$.chunker.size" in message
    assert "'big'" in message
    assert "expected an integer" in message


def test_bool_is_not_an_integer_and_float_is_not_silently_truncated(tmp_path: Path, registry: Registry) -> None:
    assert "expected an integer" in error_of(tmp_path, "[chunker]\nsize = true\n", registry)
    message = error_of(tmp_path, "[chunker]\nsize = 5.7\n", registry)
    assert "5.7" in message and "$.chunker.size" in message


def test_unknown_key_suggests_the_right_one(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, "[chunker]\nsise = 500\n", registry)
    assert "unknown key 'sise' @ $.chunker" in message
    assert "did you mean 'size'?" in message


def test_unknown_top_level_key_suggests(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, "[retreiver]\ntop_k = 3\n", registry)
    assert "unknown key 'retreiver' @ $" in message and "did you mean 'retriever'?" in message


def test_unknown_component_lists_installed_ones(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, '[chunker]\ntype = "recursiv"\n', registry)
    assert "unknown chunker type 'recursiv'" in message
    assert "installed:" in message and "fixed" in message and "recursive" in message
    assert "did you mean 'recursive'?" in message


def test_unknown_component_from_a_known_package_names_the_package(tmp_path: Path) -> None:
    from ragloom.plugins import make_plugin_manager

    bare = Registry(make_plugin_manager(load_entry_points=False))
    message = error_of(tmp_path, '[store]\ntype = "pgvector"\n', bare)
    assert "ragloom-pgvector" in message and "pip install ragloom-pgvector" in message


def test_missing_required_key(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, "[[sources]]\ntags = ['x']\n", registry)
    assert "missing required key @ $.sources[0]" in message
    message = error_of(tmp_path, "[reranker]\ntop_n = 3\n", registry)
    assert "missing required key @ $.reranker.type" in message


def test_validator_errors_name_the_table(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, "[chunker]\nsize = 100\noverlap = 100\n", registry)
    assert "'overlap' (100) must be smaller than 'size' (100)" in message and "$.chunker" in message
    message = error_of(tmp_path, "[chunker]\nsize = 0\n", registry)
    assert "'size' must be > 0" in message


def test_literal_choices_are_listed(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, '[ingest]\non_error = "ignore"\n', registry)
    assert "$.ingest.on_error" in message and "'fail'" in message and "'skip'" in message


def test_invalid_toml_names_the_file_and_line(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, "[chunker\nsize = 1\n", registry)
    assert "ragloom.toml" in message and "invalid TOML" in message and "line 1" in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        PipelineConfig.from_toml(tmp_path / "absent.toml")


def test_several_problems_are_all_reported(tmp_path: Path, registry: Registry) -> None:
    with pytest.raises(ConfigError) as info:
        PipelineConfig.from_toml(write(tmp_path, '[chunker]\nsize = "x"\nsise = 1\n'), registry=registry)
    assert len(info.value.lines) == 2


def test_bad_filter_in_config_is_a_config_error(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, '[retriever]\nfilter = { year = { "$between" = [1, 2] } }\n', registry)
    assert "$between" in message and "$.retriever" in message


class TestSecrets:
    def test_plain_value_is_refused(self, tmp_path: Path, registry: Registry) -> None:
        import attrs

        from ragloom.config import structure_options

        @attrs.frozen
        class WithKey:
            api_key: Secret

        with pytest.raises(ConfigError) as info:
            structure_options(WithKey, {"api_key": "sk-live-123"}, path="$.reranker")
        assert "never written in config" in str(info.value)
        assert "sk-live-123" not in str(info.value).split("invalid value")[0]

    def test_reference_is_resolved_at_build_and_masked(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import attrs

        from ragloom.config import structure_options

        @attrs.frozen
        class WithKey:
            api_key: Secret

        config = structure_options(WithKey, {"api_key": {"env": "RAGLOOM_TEST_KEY"}}, path="$.x")
        monkeypatch.setenv("RAGLOOM_TEST_KEY", "s3cr3t-value")
        assert config.api_key.get() == "s3cr3t-value"
        assert "s3cr3t-value" not in repr(config)
        assert "RAGLOOM_TEST_KEY" in repr(config)

    def test_unset_variable_is_a_clear_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("RAGLOOM_ABSENT_KEY", raising=False)
        with pytest.raises(ConfigError, match="RAGLOOM_ABSENT_KEY is not set"):
            Secret("RAGLOOM_ABSENT_KEY").get()


def test_python_builder_uses_the_same_config_classes(registry: Registry) -> None:
    builder = Pipeline.builder(registry=registry).chunker("recursive", size=500, overlap=50)
    assert builder.config().chunker.config == RecursiveConfig(size=500, overlap=50)
    with pytest.raises(ConfigError, match="did you mean 'size'"):
        Pipeline.builder(registry=registry).chunker("recursive", sise=500)
    with pytest.raises(ConfigError, match="expected an integer"):
        Pipeline.builder(registry=registry).chunker("recursive", size="500")
    with pytest.raises(ConfigError, match="unknown embedder type 'hsh'"):
        Pipeline.builder(registry=registry).embedder("hsh")


def test_toml_and_builder_give_equal_configs(tmp_path: Path, registry: Registry) -> None:
    from_toml = PipelineConfig.from_toml(
        write(tmp_path, 'namespace = "n"\n[chunker]\ntype = "fixed"\nsize = 64\noverlap = 8\n[embedder]\ndim = 32\n'),
        registry=registry,
    )
    built = (
        Pipeline.builder(registry=registry).namespace("n").chunker("fixed", size=64, overlap=8).embedder("hash", dim=32).config()
    )
    for field in ("namespace", "chunker", "embedder", "store", "retriever", "reranker", "ingest"):
        assert getattr(from_toml, field) == getattr(built, field), field


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "ragloom.toml"
    config.write_text('[[sources]]\npath = "../corpus"\n', encoding="utf-8")
    pipeline = Pipeline.from_toml(config)
    result = pipeline.ingest()
    assert result.sources == 12


def test_a_string_is_not_split_into_a_list_of_characters(tmp_path: Path, registry: Registry) -> None:
    message = error_of(tmp_path, '[[sources]]\npath = "docs"\ntags = "public"\n', registry)
    assert "invalid value 'public' @ $.sources[0].tags: expected a list of strings" in message
    message = error_of(tmp_path, '[chunker]\nseparators = "\\n"\n', registry)
    assert "$.chunker.separators" in message
