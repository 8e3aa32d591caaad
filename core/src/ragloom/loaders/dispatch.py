"""The ``auto`` loader: a loader per source, by URL scheme, else by file suffix.

It is registered like any other loader; the pipeline builds it through the
registry and asks it which files a source expands to and which loader reads
each (:class:`ragloom.loaders.base.SourceRouter`). Each dispatched loader is
built once, with its ``[loaders.<name>]`` options from the build context.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import Loader, is_url, iter_files, suffix_of
from ragloom.types import Document

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


class LoaderSet:
    """Every registered loader, built on first use with its configured options."""

    def __init__(self, context: BuildContext, options: dict[str, Any] | None = None):
        self.context = context
        self.registry = context.registry
        self.options = {**context.loader_options, **(options or {})}
        self._built: dict[str, Loader] = {}
        self._by_suffix: dict[str, str] = {}
        self._by_scheme: dict[str, str] = {}
        for info in self.registry.all():
            if info.stage != "loader":
                continue
            for suffix in info.suffixes:
                self._by_suffix.setdefault(suffix if suffix.startswith(".") else f".{suffix}", info.name)
            for scheme in info.schemes:
                self._by_scheme.setdefault(scheme, info.name)

    def get(self, name: str) -> Loader:
        """The loader registered as ``name``, built once."""
        loader = self._built.get(name)
        if loader is None:
            info = self.registry.get("loader", name)
            config = self.options.get(name)
            if config is None and info.config is not None:
                config = self.registry.configure("loader", name, {}, path=f"$.loaders.{name}", name_path=f"$.loaders.{name}").config
            loader = self._built[name] = self.registry.build_from_config(info, config, self.context)
        return loader

    async def aclose(self) -> None:
        """Close the async connection pools of the loaders built so far (the web loader's, for one)."""
        for loader in list(self._built.values()):
            closer = getattr(loader, "aclose", None)
            if closer is not None:
                await closer()

    def name_for(self, source: str) -> str | None:
        """Name of the loader for a URL (by scheme) or a file (by suffix), or None."""
        if is_url(source):
            return self._by_scheme.get(source.split("://", 1)[0].lower())
        return self._by_suffix.get(suffix_of(source))

    def suffixes(self) -> list[str]:
        """Every suffix some loader handles."""
        return sorted(self._by_suffix)

    def expand(self, source: str) -> tuple[list[str], list[str]]:
        """``(files with a loader, files without one)`` for a file or directory source."""
        if is_url(source) or not os.path.isdir(source):
            return ([source], []) if self.name_for(source) or is_url(source) else ([], [source])
        loadable: list[str] = []
        skipped: list[str] = []
        for path in iter_files(source):
            (loadable if self.name_for(path) else skipped).append(path)
        return loadable, skipped


@attrs.frozen(kw_only=True)
class AutoLoaderConfig:
    """The auto loader takes no options of its own; each dispatched loader uses its ``[loaders.<name>]`` table."""


class AutoLoader:
    """Dispatches each file by suffix (and each URL by scheme); directories in sorted order."""

    def __init__(self, loaders: LoaderSet):
        self.loaders = loaders

    def expand(self, source: str) -> tuple[list[str], list[str]]:
        """``(files some loader reads, files none does)`` of a file, directory or URL source."""
        return self.loaders.expand(source)

    def name_for(self, source: str) -> str | None:
        """The name of the loader for one file or URL, or None."""
        return self.loaders.name_for(source)

    def get(self, name: str) -> Loader:
        """The loader registered as ``name``, built once with its options."""
        return self.loaders.get(name)

    async def aclose(self) -> None:
        """Close the dispatched loaders' async connection pools."""
        await self.loaders.aclose()

    def load(self, source: str) -> Iterator[Document]:
        """Documents of every loadable file under ``source``."""
        files, skipped = self.loaders.expand(source)
        if not files and skipped and not Path(source).is_dir():
            raise LoaderError(f"no loader handles {suffix_of(source) or 'files without a suffix'}", source=source)
        for path in files:
            name = self.loaders.name_for(path)
            if name is None:
                raise LoaderError("no loader handles this URL scheme", source=path)
            yield from self.loaders.get(name).load(path)
