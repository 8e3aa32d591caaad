"""``[ingest] executor``: a registered executor receives the ingest; its options come from ``[ingest.<name>]``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from ragloom import (
    ConfigError,
    Executor,
    IngestResult,
    IngestTarget,
    Pipeline,
    PipelineConfig,
    Registry,
    hookimpl,
    make_plugin_manager,
)


@attrs.frozen(kw_only=True)
class ReverseConfig:
    note: str = "none"


class ReverseExecutor:
    """Ingests the targets in reverse order, in this process: an executor built only on the public API."""

    def __init__(self, config: ReverseConfig):
        self.config = config
        self.seen: list[IngestTarget] = []

    def ingest(self, pipeline: Pipeline, targets: Sequence[IngestTarget], *, progress: Any = None) -> IngestResult:
        self.seen = list(targets)
        inner = Pipeline.from_config(attrs.evolve(pipeline.config, executor=None), registry=pipeline.registry, instances={"store": pipeline.store, "embedder": pipeline.embedder})
        results = [inner.ingest(t.source, loader=t.loader, tags=t.tags) for t in reversed(targets)]
        total = {key: sum(getattr(r, key) for r in results) for key in ("documents", "chunks", "embedded", "sources", "unchanged")}
        return IngestResult(**total)


BUILT: list[ReverseExecutor] = []


class ReversePlugin:
    @hookimpl
    def register_executors(self, register):  # type: ignore[no-untyped-def]
        def factory(config: ReverseConfig, context: Any) -> ReverseExecutor:
            BUILT.append(ReverseExecutor(config))
            return BUILT[-1]

        register("reverse", factory, config=ReverseConfig)


@pytest.fixture
def registry() -> Registry:
    return Registry(make_plugin_manager(extra_plugins=[ReversePlugin()]))


def _config(registry: Registry, ingest: dict[str, Any]) -> PipelineConfig:
    return PipelineConfig.from_dict({"chunker": {"type": "recursive", "size": 200}, "embedder": {"type": "hash", "dim": 32}, "ingest": ingest}, registry=registry)


def test_the_executor_gets_the_ingest_with_its_table(registry: Registry, tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / f"{name}.txt").write_text(f"{name} lamp copper river " * 40, encoding="utf-8")
    config = _config(registry, {"executor": "reverse", "reverse": {"note": "hello"}, "on_error": "skip"})
    assert config.ingest.executor == "reverse" and config.executor is not None and config.executor.config == ReverseConfig(note="hello")
    pipeline = Pipeline.from_config(config, registry=registry)
    result = pipeline.ingest([tmp_path / "one.txt", tmp_path / "two.txt"], tags=["t"])
    executor = BUILT[-1]
    assert isinstance(executor, Executor) and executor.config.note == "hello"
    assert [t.source for t in executor.seen] == [str(tmp_path / "one.txt"), str(tmp_path / "two.txt")] and executor.seen[0].tags == ("t",)
    assert result.sources == 2 and result.chunks > 0 and sorted(pipeline.sources()) == [str(tmp_path / "one.txt"), str(tmp_path / "two.txt")]


def test_executor_options_are_validated_and_named(registry: Registry) -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'note'.*|unknown key 'nte'"):
        _config(registry, {"executor": "reverse", "reverse": {"nte": "x"}})
    with pytest.raises(ConfigError, match="unknown executor type 'nope'.*installed: .*reverse"):
        _config(registry, {"executor": "nope"})
    kept = _config(registry, {"reverse": {"note": "x"}})  # a table for an executor not chosen: validated and kept
    assert kept.executor is None and kept.executors["reverse"].config == ReverseConfig(note="x")
    with pytest.raises(ConfigError, match=r"unknown executor type 'nope' @ \$\.ingest\.executor"):
        _config(registry, {"nope": {"address": "auto"}})
    assert _config(registry, {}).executor is None and _config(registry, {}).ingest.executor == "local"


def test_an_uninstalled_executor_names_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_LOAD_PLUGINS", "")  # no entry points: as without ragloom-ray
    with pytest.raises(ConfigError, match=r"unknown executor type 'ray'.*pip install ragloom-ray"):
        _config(Registry(), {"executor": "ray", "ray": {"address": "auto"}})


def test_the_builder_takes_the_executor_too(registry: Registry) -> None:
    builder = Pipeline.builder(registry=registry).ingest_options(executor="reverse", reverse={"note": "b"}, batch_size=8)
    config = builder.config()
    assert config.executor is not None and config.executor.config == ReverseConfig(note="b") and config.ingest.batch_size == 8


def test_cli_address_needs_a_distributed_executor(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text('[store]\ntype = "memory"\n', encoding="utf-8")
    (tmp_path / "a.txt").write_text("lamp", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "ingest", "-c", str(tmp_path / "p.toml"), "--address", "auto", str(tmp_path / "a.txt")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1 and "--address needs a distributed executor" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "ingest", "-c", str(tmp_path / "p.toml"), "--executor", "nope", str(tmp_path / "a.txt")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1 and "unknown executor type 'nope'" in done.stderr and "Traceback" not in done.stderr
