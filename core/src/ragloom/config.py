"""Pipeline configuration: TOML -> attrs classes through cattrs.

Two stages: a component table such as ``[chunker] type = "recursive" size = 500``
becomes ``ComponentSpec(type="recursive", config=<RecursiveConfig>)`` where the
options are structured into the component's own frozen config class (unknown
keys rejected with a did-you-mean). The Python builder goes through the same
classes, so TOML and Python cannot drift.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import attrs

from ragloom.errors import ConfigError, short_repr
from ragloom.plugins import ComponentSpec, Registry
from ragloom.structuring import Secret, converter, did_you_mean, structure_options

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10
    import tomli as tomllib

__all__ = [
    "ComponentSpec",
    "IngestConfig",
    "PipelineConfig",
    "Secret",
    "SourceConfig",
    "converter",
    "did_you_mean",
    "structure_options",
    "tomllib",
]


# --------------------------------------------------------------------------- pipeline config


@attrs.frozen(kw_only=True)
class SourceConfig:
    """One entry of ``[[sources]]``: a path or URL(s), optionally a forced loader and tags."""

    path: str | None = None
    url: str | None = None
    urls: tuple[str, ...] = ()
    loader: str | None = None
    tags: tuple[str, ...] = ()

    def targets(self) -> list[str]:
        """The sources to ingest."""
        out: list[str] = []
        if self.path:
            out.append(self.path)
        if self.url:
            out.append(self.url)
        out.extend(self.urls)
        return out


@attrs.frozen(kw_only=True)
class IngestConfig:
    """``[ingest]``: how ingestion runs."""

    #: chunks embedded and written together; the embedder gets them in calls of its own batch size, cut from the
    #: texts sorted by length, so a window several calls wide pads less (1,024 vs 256: ~4% less MiniLM time on SciFact)
    batch_size: int = attrs.field(default=1024, validator=attrs.validators.gt(0))
    commit_every: int = attrs.field(default=500, validator=attrs.validators.gt(0))
    on_error: Literal["fail", "skip"] = "fail"
    remove_missing: bool = True
    #: "local" (in this process) or a registered executor (e.g. "ray"), whose options are the ``[ingest.<name>]`` table
    executor: str = attrs.field(default="local", validator=attrs.validators.min_len(1))


DEFAULT_TYPES = {
    "chunker": "recursive",
    "embedder": "hash",
    "store": "memory",
    "retriever": "similarity",
    "llm": "openai",
}
TOP_LEVEL_KEYS = ("namespace", "sources", "loaders", "chunker", "embedder", "store", "retriever", "reranker", "llm", "ingest")


@attrs.frozen(kw_only=True)
class PipelineConfig:
    """A whole pipeline, validated. Build it with :meth:`from_toml` or :meth:`from_dict`."""

    namespace: str = "default"
    sources: tuple[SourceConfig, ...] = ()
    loaders: dict[str, Any] = attrs.field(factory=dict)
    chunker: ComponentSpec = attrs.field(factory=lambda: ComponentSpec(type="recursive"))
    embedder: ComponentSpec = attrs.field(factory=lambda: ComponentSpec(type="hash"))
    store: ComponentSpec = attrs.field(factory=lambda: ComponentSpec(type="memory"))
    retriever: ComponentSpec = attrs.field(factory=lambda: ComponentSpec(type="similarity"))
    reranker: ComponentSpec | None = None
    llm: ComponentSpec | None = None
    ingest: IngestConfig = attrs.field(factory=IngestConfig)
    #: the ``[ingest] executor`` and its ``[ingest.<name>]`` options; None: in-process
    executor: ComponentSpec | None = None
    #: every ``[ingest.<executor>]`` table, validated (``--executor NAME`` picks one)
    executors: dict[str, ComponentSpec] = attrs.field(factory=dict)
    base_dir: Path = attrs.field(factory=Path.cwd)
    file: str | None = None

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], *, registry: Registry | None = None) -> PipelineConfig:
        """Read and validate a pipeline TOML file."""
        file = Path(path)
        try:
            raw = file.read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {file}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from None
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(file)) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML: {exc}", file=str(file)) from None
        except RecursionError:
            raise ConfigError("invalid TOML: arrays or tables nested too deeply", file=str(file)) from None
        return cls.from_dict(data, registry=registry, base_dir=file.resolve().parent, file=str(file))

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        *,
        registry: Registry | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        file: str | None = None,
    ) -> PipelineConfig:
        """Validate a parsed TOML document (or an equivalent dict)."""
        registry = registry or Registry()
        try:
            return cls._from_dict(data, registry, Path(base_dir) if base_dir else Path.cwd(), file)
        except ConfigError as exc:
            if file and exc.file is None:
                raise ConfigError("; ".join(exc.lines), file=file, lines=exc.lines) from None
            raise

    @classmethod
    def _from_dict(cls, data: dict[str, Any], registry: Registry, base_dir: Path, file: str | None) -> PipelineConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"invalid value {short_repr(data)} @ $: expected a table")
        problems: list[str] = []
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                problems.append(f"unknown key {key!r} @ ${did_you_mean(key, TOP_LEVEL_KEYS)} (allowed: {', '.join(TOP_LEVEL_KEYS)})")
        if problems:
            raise ConfigError("; ".join(problems), lines=problems)
        kwargs: dict[str, Any] = {"base_dir": base_dir, "file": file}

        def section(key: str, parse: Any) -> None:
            if key not in data:
                return
            try:
                kwargs[key] = parse(data[key])
            except ConfigError as exc:
                problems.extend(exc.lines)

        section("namespace", lambda v: structure_options(_Namespace, {"namespace": v}, path="$").namespace)
        section("sources", lambda v: _parse_sources(v, registry))
        section("loaders", lambda v: parse_loader_options(v, registry))
        for stage in ("chunker", "embedder", "store", "retriever", "reranker", "llm"):
            section(stage, lambda v, stage=stage: parse_component(stage, v, registry, path=f"$.{stage}"))
        section("ingest", lambda v: parse_ingest(v, registry))
        if "ingest" in kwargs:
            kwargs["ingest"], kwargs["executor"], kwargs["executors"] = kwargs["ingest"]
        if problems:
            raise ConfigError("; ".join(problems), lines=problems)
        return cls(**kwargs)


def _parse_sources(sources: Any, registry: Registry) -> tuple[SourceConfig, ...]:
    if not isinstance(sources, list):
        raise ConfigError(f"invalid value {short_repr(sources)} @ $.sources: expected an array of tables [[sources]]")
    parsed = []
    for i, item in enumerate(sources):
        source = structure_options(SourceConfig, item, path=f"$.sources[{i}]")
        if not source.targets():
            raise ConfigError(f"missing required key @ $.sources[{i}]: give 'path', 'url' or 'urls'")
        if source.loader is not None:
            registry.get("loader", source.loader, path=f"$.sources[{i}].loader")
        parsed.append(source)
    return tuple(parsed)


@attrs.frozen
class _Namespace:
    namespace: str = attrs.field(validator=attrs.validators.min_len(1))


def parse_component(stage: str, table: Any, registry: Registry, *, path: str) -> ComponentSpec:
    """``{type = "x", **options}`` -> ComponentSpec with a validated config."""
    if isinstance(table, str):
        table = {"type": table}
    if not isinstance(table, dict):
        raise ConfigError(f"invalid value {short_repr(table)} @ {path}: expected a table with 'type'")
    options = dict(table)
    name = options.pop("type", DEFAULT_TYPES.get(stage))
    if name is None:
        raise ConfigError(f"missing required key @ {path}.type (installed: {', '.join(registry.names(stage))})")
    if not isinstance(name, str):
        raise ConfigError(f"invalid value {short_repr(name)} @ {path}.type: expected a string")
    return registry.configure(stage, name, options, path=path)


def parse_ingest(table: Any, registry: Registry) -> tuple[IngestConfig, ComponentSpec | None, dict[str, ComponentSpec]]:
    """``[ingest]`` -> its config, the chosen executor's spec and every ``[ingest.<executor>]`` table's spec.

    A table for an executor that is not chosen is validated and kept, so ``ragloom ingest --executor NAME``
    runs the same file with its options.
    """
    options = dict(table) if isinstance(table, dict) else table
    tables = {k: options.pop(k) for k in list(options) if isinstance(options[k], dict)} if isinstance(options, dict) else {}
    ingest = structure_options(IngestConfig, options, path="$.ingest")
    specs: dict[str, ComponentSpec] = {}
    for name, executor_options in tables.items():
        spec = executor_spec(name, executor_options, registry)
        if spec is not None:
            specs[name] = spec
    chosen = specs.get(ingest.executor) or executor_spec(ingest.executor, None, registry)
    return ingest, chosen, specs


def executor_spec(name: str, options: Any, registry: Registry) -> ComponentSpec | None:
    """The spec of a registered executor (None for ``local``) with its ``[ingest.<name>]`` options."""
    if name == "local":
        if options:
            raise ConfigError("the local executor takes no options (@ $.ingest.local)")
        return None
    if options is not None and not isinstance(options, dict):
        raise ConfigError(f"invalid value {short_repr(options)} @ $.ingest.{name}: expected a table")
    return registry.configure("executor", name, dict(options or {}), path=f"$.ingest.{name}", name_path="$.ingest.executor")


def parse_loader_options(table: Any, registry: Registry) -> dict[str, Any]:
    """``[loaders.<name>]`` tables -> {name: validated config}."""
    if not isinstance(table, dict):
        raise ConfigError(f"invalid value {short_repr(table)} @ $.loaders: expected a table of loader tables")
    out: dict[str, Any] = {}
    for name, options in table.items():
        out[name] = registry.configure("loader", name, options, path=f"$.loaders.{name}", name_path=f"$.loaders.{name}").config
    return out
