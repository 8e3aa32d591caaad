"""Pipeline behaviour pinned down while checking the mutants no earlier run reached.

The ``[loaders.auto]`` table reaches the ``auto`` loader the pipeline routes every source through:
ragloom's own ``auto`` loader takes no options, but a registry may be made from any
plugin manager: one whose plugin registers its own ``auto`` (with options) in place of
ragloom's loaders gets those options from ``[loaders.auto]`` like any other loader.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from ragloom import Document, LoaderError, Pipeline, Registry, hookimpl, make_plugin_manager
from ragloom.loaders.dispatch import AutoLoader, LoaderSet
from ragloom.stores.memory import MemoryStore


@attrs.frozen(kw_only=True)
class RouterOptions:
    label: str = "default"


class OwnRouter:
    """Registers ``auto``: ragloom's router, recording the options it was built with."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl
    def register_loaders(self, register: Any) -> None:
        def auto(config: RouterOptions, context: Any) -> AutoLoader:
            self.seen.append(config)
            return AutoLoader(LoaderSet(context))

        register("auto", auto, config=RouterOptions)


def test_the_auto_loader_is_built_with_its_loaders_table() -> None:
    plugin = OwnRouter()
    manager = make_plugin_manager(load_entry_points=False)
    manager.unregister(name="ragloom.loaders.plugin")  # ragloom's loaders out, this plugin's auto in
    manager.register(plugin)
    registry = Registry(manager)
    builder = Pipeline.builder(registry=registry).embedder("hash", dim=32).store(MemoryStore())
    pipeline = builder.loader("auto", label="from the table").build()
    assert plugin.seen == [RouterOptions(label="from the table")]
    assert pipeline.config.loaders["auto"] is plugin.seen[0]
    assert isinstance(pipeline.loaders, AutoLoader)
    Pipeline.builder(registry=registry).embedder("hash", dim=32).store(MemoryStore()).build()
    assert plugin.seen[1] == RouterOptions(), "no table: the defaults"


def test_documents_of_one_source_apart_are_refused_with_the_exact_message() -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=32).store(MemoryStore()).build()
    documents = [Document(id="1", text="one.", source="app:a"), Document(id="2", text="two.", source="app:b")]
    with pytest.raises(LoaderError) as raised:
        pipeline.ingest_documents([*documents, Document(id="3", text="three.", source="app:a")])
    assert raised.value.reason == "documents of one source must come together"
    assert str(raised.value) == "app:a: documents of one source must come together"
