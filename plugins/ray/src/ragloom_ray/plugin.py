"""The ragloom plugin: registers the ``ray`` ingest executor."""

from __future__ import annotations

from typing import Any

from ragloom.plugin import BuildContext, hookimpl
from ragloom_ray.config import RayExecutorConfig


def _ray(config: RayExecutorConfig, context: BuildContext) -> Any:
    """Ingest on a Ray cluster (Ray Data): tasks load and chunk, actors embed, the store is written in parallel or by the driver."""
    from ragloom_ray.executor import RayExecutor

    return RayExecutor(config)


@hookimpl
def register_executors(register):  # type: ignore[no-untyped-def]
    register("ray", _ray, config=RayExecutorConfig)
