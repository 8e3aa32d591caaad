"""Pipeline configuration: TOML -> attrs classes through cattrs.

Two stages: a component table such as ``[chunker] type = "recursive" size = 500``
becomes ``ComponentSpec(type="recursive", config=<RecursiveConfig>)`` where the
options are structured into the component's own frozen config class (unknown
keys rejected with a did-you-mean). The Python builder goes through the same
classes, so TOML and Python cannot drift.
"""

from __future__ import annotations

import difflib
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs
from cattrs.errors import (
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)

from ragloom.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10
    import tomli as tomllib

if typing.TYPE_CHECKING:
    from ragloom.plugins import Registry

_MISSING = object()
_UNION_ORIGINS = (typing.Union, getattr(types, "UnionType", typing.Union))  # X | Y is types.UnionType on 3.10+


# --------------------------------------------------------------------------- secrets


@attrs.frozen(repr=False)
class Secret:
    """A reference to an environment variable holding a secret: ``{ env = "NAME" }``.

    The value is read only by :meth:`get` (when the component is built) and is
    never shown in a repr, a log or an error.
    """

    env: str

    def get(self) -> str:
        """The secret's value; ConfigError when the variable is unset or empty."""
        value = os.environ.get(self.env)
        if not value:
            raise ConfigError(f"environment variable {self.env} is not set (it holds a secret this pipeline needs)")
        return value

    def __repr__(self) -> str:
        return f"Secret(env={self.env!r}, value=***)"

    __str__ = __repr__


def _structure_secret(value: Any, _type: Any) -> Secret:
    if isinstance(value, Secret):
        return value
    if isinstance(value, dict) and set(value) == {"env"} and isinstance(value["env"], str) and value["env"]:
        return Secret(value["env"])
    if isinstance(value, str):
        raise ValueError('secrets are never written in config; use a reference: { env = "NAME_OF_VARIABLE" }')
    raise ValueError('expected a secret reference { env = "NAME_OF_VARIABLE" }')


# --------------------------------------------------------------------------- converter


def _strict(kind: type) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {_type_name(kind)}")
        if not isinstance(value, kind):
            raise TypeError(f"expected {_type_name(kind)}")
        return value

    return structure


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (int, float, str, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Secret, _structure_secret)
    converter.register_structure_hook(Path, lambda v, _t: Path(_strict(str)(v, str)))
    converter.register_structure_hook_func(lambda tp: tp is Any, lambda v, _t: v)
    return converter


converter = _make_converter()


# --------------------------------------------------------------------------- messages


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...]) -> str:
    """``"; did you mean 'size'?"`` or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in _UNION_ORIGINS:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args)
    if origin in (list, tuple, typing.Sequence, set, frozenset):
        args = typing.get_args(tp)
        plural = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}
        return f"a list of {plural.get(args[0], _type_name(args[0]))}" if args else "a list"
    if origin is dict:
        return "a table"
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", Path: "a path", Secret: "a secret reference { env = ... }"}
    if tp in names:
        return names[tp]
    if attrs.has(tp):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def _describe(exc: BaseException, value: Any, path: str, expected: Any, lines: list[str]) -> None:
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for inner, note in with_notes:
            sub = value.get(note.name, _MISSING) if isinstance(value, dict) else _MISSING
            _describe(inner, sub, f"{path}.{note.name}", note.type, lines)
        for inner in without:
            if isinstance(inner, (ValueError, TypeError)) and not isinstance(inner, BaseValidationError):
                lines.append(f"{inner} @ {path}")  # an attrs validator of the class itself
            else:
                _describe(inner, value, path, expected, lines)
    elif isinstance(exc, IterableValidationError):
        with_notes, without = exc.group_exceptions()
        for inner, note in with_notes:
            try:
                sub = value[note.index]
            except (TypeError, KeyError, IndexError):
                sub = _MISSING
            _describe(inner, sub, f"{path}[{note.index}]", note.type, lines)
        for inner in without:
            _describe(inner, value, path, expected, lines)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = [field.name for field in attrs.fields(exc.cl)]
        for key in sorted(exc.extra_fields):
            allowed_text = ", ".join(allowed) if allowed else "none"
            lines.append(f"unknown key {key!r} @ {path}{did_you_mean(key, allowed)} (allowed: {allowed_text})")
    elif isinstance(exc, BaseValidationError):
        for inner in exc.exceptions:
            _describe(inner, value, path, expected, lines)
    elif isinstance(exc, KeyError) and value is _MISSING:
        lines.append(f"missing required key @ {path}" + (f" (expected {_type_name(expected)})" if expected is not None else ""))
    else:
        message = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)
        if typing.get_origin(expected) is Literal:
            message = ""
        shown = "" if value is _MISSING else f"invalid value {value!r} @ {path}: "
        if not shown:
            shown = f"invalid @ {path}: "
        if expected is not None and not message.startswith("expected"):
            message = f"{message}; expected {_type_name(expected)}" if message else f"expected {_type_name(expected)}"
        lines.append(shown + (message or f"expected {_type_name(expected)}"))


def _is_sequence_type(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in _UNION_ORIGINS:
        return any(_is_sequence_type(arg) for arg in typing.get_args(tp) if arg is not type(None))
    return origin in (list, tuple, typing.Sequence, set, frozenset) or tp in (list, tuple)


def _refuse_strings_for_lists(config_cls: type | None, options: dict[str, Any], path: str) -> None:
    """A string where a list is expected would be split into characters by cattrs: refuse it."""
    if config_cls is None or not attrs.has(config_cls):
        return
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations: leave it to cattrs
        return
    problems = [
        f"invalid value {options[field.name]!r} @ {path}.{field.name}: expected {_type_name(hints[field.name])}"
        for field in attrs.fields(config_cls)
        if field.name in options and isinstance(options[field.name], str) and field.name in hints and _is_sequence_type(hints[field.name])
    ]
    if problems:
        raise ConfigError("; ".join(problems), lines=problems)


def structure_options(config_cls: type | None, options: dict[str, Any], *, path: str) -> Any:
    """Validate a component's options into its config class (``None``: no options allowed)."""
    if not isinstance(options, dict):
        raise ConfigError(f"invalid value {options!r} @ {path}: expected a table")
    _refuse_strings_for_lists(config_cls, options, path)
    if config_cls is None:
        if options:
            keys = ", ".join(sorted(options))
            raise ConfigError(f"unknown key(s) {keys} @ {path}: this component takes no options")
        return None
    try:
        return converter.structure(options, config_cls)
    except BaseValidationError as exc:
        lines: list[str] = []
        _describe(exc, options, path, config_cls, lines)
        raise ConfigError("; ".join(lines), lines=lines) from None
    except (ValueError, TypeError) as exc:  # attrs validators run in __init__
        raise ConfigError(f"{exc} @ {path}") from None


# --------------------------------------------------------------------------- pipeline config


@attrs.frozen(kw_only=True)
class ComponentSpec:
    """A component chosen by registered name, with its validated config object."""

    type: str
    config: Any = None


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

    batch_size: int = attrs.field(default=256, validator=attrs.validators.gt(0))
    commit_every: int = attrs.field(default=500, validator=attrs.validators.gt(0))
    on_error: Literal["fail", "skip"] = "fail"
    remove_missing: bool = True


DEFAULT_TYPES = {
    "chunker": "recursive",
    "embedder": "hash",
    "store": "memory",
    "retriever": "similarity",
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
    llm: Any = None
    ingest: IngestConfig = attrs.field(factory=IngestConfig)
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
        from ragloom.plugins import Registry

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
            raise ConfigError(f"invalid value {data!r} @ $: expected a table")
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
        for stage in ("chunker", "embedder", "store", "retriever", "reranker"):
            section(stage, lambda v, stage=stage: parse_component(stage, v, registry, path=f"$.{stage}"))
        section("ingest", lambda v: structure_options(IngestConfig, v, path="$.ingest"))
        section("llm", parse_llm)
        if problems:
            raise ConfigError("; ".join(problems), lines=problems)
        return cls(**kwargs)


def _parse_sources(sources: Any, registry: Registry) -> tuple[SourceConfig, ...]:
    if not isinstance(sources, list):
        raise ConfigError(f"invalid value {sources!r} @ $.sources: expected an array of tables [[sources]]")
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
        raise ConfigError(f"invalid value {table!r} @ {path}: expected a table with 'type'")
    options = dict(table)
    name = options.pop("type", DEFAULT_TYPES.get(stage))
    if name is None:
        raise ConfigError(f"missing required key @ {path}.type (installed: {', '.join(registry.names(stage))})")
    if not isinstance(name, str):
        raise ConfigError(f"invalid value {name!r} @ {path}.type: expected a string")
    registry.get(stage, name, path=f"{path}.type")
    return ComponentSpec(type=name, config=registry.structure_config(stage, name, options, path=path))


def parse_loader_options(table: Any, registry: Registry) -> dict[str, Any]:
    """``[loaders.<name>]`` tables -> {name: validated config}."""
    if not isinstance(table, dict):
        raise ConfigError(f"invalid value {table!r} @ $.loaders: expected a table of loader tables")
    out: dict[str, Any] = {}
    for name, options in table.items():
        registry.get("loader", name, path=f"$.loaders.{name}")
        out[name] = registry.structure_config("loader", name, options, path=f"$.loaders.{name}")
    return out


def parse_llm(table: Any) -> Any:
    """``[llm]`` -> the LLM client config (see ragloom.llm)."""
    from ragloom.llm import LLMConfig

    return structure_options(LLMConfig, table, path="$.llm")
