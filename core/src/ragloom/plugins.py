"""Plugin manager and component registry.

Built-in components are registered by the default plugins below through the
same hooks as third-party packages, which are found through the entry-point
group ``ragloom``. Operators steer loading with environment variables:

- ``RAGLOOM_LOAD_PLUGINS=a,b``  load only these entry points (empty: none);
- ``RAGLOOM_DISABLE_PLUGINS=a,b``  skip these entry points;
- ``RAGLOOM_TRACE_PLUGINS=1``  print every hook call to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from ragloom import hookspecs
from ragloom.errors import ConfigError, PluginError
from ragloom.structuring import did_you_mean, structure_options

if TYPE_CHECKING:  # the protocols are types only here: the registry never imports a stage
    from ragloom.protocols import Embedder, LLMLike, Store

ENTRY_POINT_GROUP = "ragloom"

DEFAULT_PLUGINS = (
    "ragloom.loaders.plugin",
    "ragloom.chunkers.plugin",
    "ragloom.embedders.plugin",
    "ragloom.stores.plugin",
    "ragloom.retrievers.plugin",
    "ragloom.rerankers.plugin",
    "ragloom.llm",
)

STAGES = ("loader", "chunker", "embedder", "store", "retriever", "reranker", "llm", "executor")
_HOOK_FOR_STAGE = {stage: f"register_{stage}s" for stage in STAGES}

#: Components that live in separately installed distributions, for hints.
KNOWN_PROVIDERS: dict[tuple[str, str], str] = {
    ("store", "duckdb"): "ragloom-duckdb",
    ("store", "pgvector"): "ragloom-pgvector",
    ("loader", "web"): "ragloom-web",
    ("reranker", "cohere"): "ragloom-cohere",
    ("embedder", "cohere"): "ragloom-cohere",
    ("embedder", "sentence-transformers"): "ragloom-sentence-transformers",
    ("reranker", "cross-encoder"): "ragloom-sentence-transformers",
    ("executor", "ray"): "ragloom-ray",
}


def _env_list(name: str) -> list[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def make_plugin_manager(*, load_entry_points: bool = True, extra_plugins: Iterable[Any] = ()) -> pluggy.PluginManager:
    """A fresh plugin manager with the default plugins and installed entry points."""
    pm = pluggy.PluginManager("ragloom")
    pm.add_hookspecs(hookspecs)
    for module_name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    pm._ragloom_distinfo = {}  # type: ignore[attr-defined]
    if load_entry_points:
        _load_entry_points(pm)
    for plugin in extra_plugins:
        pm.register(plugin)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"invalid plugin: {exc}") from exc
    return pm


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    only = _env_list("RAGLOOM_LOAD_PLUGINS")
    disabled = set(_env_list("RAGLOOM_DISABLE_PLUGINS") or [])
    for entry_point in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if only is not None and entry_point.name not in only:
            continue
        if entry_point.name in disabled or pm.has_plugin(entry_point.name):
            continue
        try:
            plugin = entry_point.load()
        except Exception as exc:  # noqa: BLE001 - any import failure is a plugin failure
            raise PluginError(
                f"plugin {entry_point.name!r} ({entry_point.value}) failed to load: {exc}; "
                f"disable it with RAGLOOM_DISABLE_PLUGINS={entry_point.name}"
            ) from exc
        try:
            pm.register(plugin, name=entry_point.name)
        except ValueError as exc:
            raise PluginError(f"plugin {entry_point.name!r} could not be registered: {exc}") from exc
        dist = getattr(entry_point, "dist", None)
        if dist is not None:
            pm._ragloom_distinfo[entry_point.name] = (dist.metadata["Name"], dist.version)  # type: ignore[attr-defined]


@attrs.frozen(kw_only=True)
class ComponentInfo:
    """One registered component: what it is and who provides it."""

    stage: str
    name: str
    factory: Callable[..., Any]
    config: type | None
    plugin: str
    distribution: str
    version: str
    suffixes: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ()
    description: str = ""


@attrs.frozen(kw_only=True)
class ComponentSpec:
    """A component chosen by registered name, with its validated config object (``None``: the defaults).

    ``strict`` (rerankers only): ``strict = true`` in ``[reranker]`` for a reranker whose
    config declares no ``strict`` option of its own; the pipeline then raises a failing
    reranker's error instead of keeping the retrieval order.
    """

    type: str
    config: Any = None
    strict: bool = False


@attrs.frozen(kw_only=True)
class _Strict:
    strict: bool = False


def _declares(config_cls: type | None, name: str) -> bool:
    """True when an attrs config class has a field ``name``."""
    return config_cls is not None and attrs.has(config_cls) and any(f.name == name for f in attrs.fields(config_cls))


@attrs.frozen(kw_only=True)
class BuildContext:
    """What a factory may use besides its config: never the whole pipeline.

    ``loader_options`` holds the validated ``[loaders.<name>]`` configs (the
    ``auto`` loader builds each dispatched loader with its own).
    """

    registry: Registry
    base_dir: Path = attrs.field(factory=Path.cwd)
    namespace: str = "default"
    embedder: Embedder | None = None
    store: Store | None = None
    llm: LLMLike | None = None
    loader_options: Mapping[str, Any] = attrs.field(factory=dict)

    def build(self, stage: str, name: str, options: dict[str, Any] | None = None, *, path: str = "") -> Any:
        """Build another component (e.g. a retriever wrapping a base retriever)."""
        return self.registry.build(stage, name, options or {}, self, path=path)

    def require_embedder(self, what: str) -> Embedder:
        """The pipeline's embedder, or a ConfigError naming the component that needs it."""
        if self.embedder is None:
            raise ConfigError(f"{what} needs the pipeline's embedder, and none was built before it")
        return self.embedder

    def require_store(self, what: str) -> Store:
        """The pipeline's store, or a ConfigError naming the component that needs it."""
        if self.store is None:
            raise ConfigError(f"{what} needs the pipeline's store, and none was built before it")
        return self.store

    def resolve_path(self, value: str | os.PathLike[str]) -> Path:
        """A path from config, relative to the config file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base_dir / path


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _core_version() -> str:
    try:
        return importlib_metadata.version("ragloom")
    except importlib_metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0+unknown"


class Registry:
    """Every component of every stage, collected from the plugin manager."""

    def __init__(self, plugin_manager: pluggy.PluginManager | None = None):
        self.plugin_manager = plugin_manager or make_plugin_manager()
        self._components: dict[str, dict[str, ComponentInfo]] = {stage: {} for stage in STAGES}
        distinfo: dict[str, tuple[str, str]] = getattr(self.plugin_manager, "_ragloom_distinfo", {})
        core = ("ragloom", _core_version())
        for stage in STAGES:
            hook = getattr(self.plugin_manager.hook, _HOOK_FOR_STAGE[stage])
            for impl in reversed(hook.get_hookimpls()):
                dist, version = distinfo.get(impl.plugin_name, core)
                before = set(self._components[stage])
                impl.function(register=self._make_register(stage, impl.plugin_name, dist, version))
                if os.environ.get("RAGLOOM_TRACE_PLUGINS"):
                    added = sorted(set(self._components[stage]) - before)
                    print(f"ragloom: {impl.plugin_name} ({dist} {version}) {hook.name}: {', '.join(added) or '-'}", file=sys.stderr)

    def _make_register(self, stage: str, plugin: str, dist: str, version: str) -> Callable[..., None]:
        def register(
            name: str,
            factory: Callable[..., Any],
            *,
            config: type | None = None,
            suffixes: Iterable[str] = (),
            schemes: Iterable[str] = (),
            description: str = "",
        ) -> None:
            if not isinstance(name, str) or not name:
                raise PluginError(f"plugin {plugin!r} registered a {stage} without a name")
            if not callable(factory):
                raise PluginError(f"plugin {plugin!r}: factory of {stage} {name!r} is not callable")
            if config is not None and not attrs.has(config):
                raise PluginError(f"plugin {plugin!r}: config of {stage} {name!r} must be an attrs class")
            existing = self._components[stage].get(name)
            if existing is not None:
                raise PluginError(
                    f"{stage} {name!r} is registered twice: by {existing.plugin!r} "
                    f"({existing.distribution}) and by {plugin!r} ({dist})"
                )
            self._components[stage][name] = ComponentInfo(
                stage=stage,
                name=name,
                factory=factory,
                config=config,
                plugin=plugin,
                distribution=dist,
                version=version,
                suffixes=tuple(s.lower() for s in suffixes),
                schemes=tuple(s.lower() for s in schemes),
                description=description or _first_line(factory.__doc__),
            )

        return register

    def names(self, stage: str) -> list[str]:
        """Registered names of one stage, sorted."""
        return sorted(self._components[stage])

    def all(self) -> list[ComponentInfo]:
        """Every component, by stage then name."""
        return [self._components[s][n] for s in STAGES for n in sorted(self._components[s])]

    def get(self, stage: str, name: str, *, path: str = "") -> ComponentInfo:
        """The component registered under ``name``, or a ConfigError listing the installed ones."""
        try:
            return self._components[stage][name]
        except KeyError:
            pass
        installed = ", ".join(self.names(stage)) or "none"
        message = f"unknown {stage} type {name!r}"
        if path:
            message += f" @ {path}"
        message += f"; installed: {installed}"
        provider = KNOWN_PROVIDERS.get((stage, name))
        if provider:
            message += f"; {name!r} is provided by the package {provider} (pip install {provider})"
        else:
            message += did_you_mean(name, self.names(stage))
        raise ConfigError(message)

    def configure(self, stage: str, name: str, options: dict[str, Any], *, path: str = "", name_path: str = "") -> ComponentSpec:
        """Look ``name`` up once and validate ``options`` into its config class: the one place options are structured.

        ``path`` locates the options in errors (default ``$.<stage>``); ``name_path`` the name (default ``<path>.type``).
        """
        where = path or f"$.{stage}"
        info = self.get(stage, name, path=name_path or f"{where}.type")
        strict = False
        if stage == "reranker" and "strict" in options and not _declares(info.config, "strict"):
            options = dict(options)  # every reranker takes strict: the pipeline applies it (ComponentSpec.strict)
            strict = structure_options(_Strict, {"strict": options.pop("strict")}, path=where).strict
        return ComponentSpec(type=name, config=structure_options(info.config, options, path=where), strict=strict)

    def structure_config(self, stage: str, name: str, options: dict[str, Any], *, path: str = "") -> Any:
        """Validate ``options`` into the component's config class."""
        return self.configure(stage, name, options, path=path).config

    def create(self, stage: str, spec: ComponentSpec, context: BuildContext, *, path: str = "") -> Any:
        """Build the component a spec names (a spec without config gets the defaults)."""
        where = path or f"$.{stage}"
        info = self.get(stage, spec.type, path=f"{where}.type")
        config = spec.config
        if config is None and info.config is not None:
            config = structure_options(info.config, {}, path=where)
        return self.build_from_config(info, config, context)

    def build(self, stage: str, name: str, options: dict[str, Any], context: BuildContext, *, path: str = "") -> Any:
        """Validate options and call the factory."""
        return self.create(stage, self.configure(stage, name, options, path=path), context, path=path)

    @staticmethod
    def build_from_config(info: ComponentInfo, config: Any, context: BuildContext) -> Any:
        """Call the factory with an already validated config object."""
        try:
            return info.factory(config, context)
        except (ConfigError, PluginError):
            raise
        except ImportError as exc:
            raise PluginError(
                f"{info.stage} {info.name!r} needs a package that is not installed: {exc.name or exc}; "
                f"install it (e.g. pip install {exc.name})"
            ) from exc
