"""Options of the ``ray`` executor: the ``[ingest.ray]`` table."""

from __future__ import annotations

from typing import Literal

import attrs

_positive = attrs.validators.gt(0)
_positive_float = attrs.validators.gt(0.0)


@attrs.frozen(kw_only=True)
class RayExecutorConfig:
    """``[ingest.ray]``.

    ``address``: the cluster (``"auto"``, ``"ray://head:10001"``); None starts a
    local one with ``local_cpus`` CPUs (all when None), unless this process is
    already connected (``ray.init`` by the application). ``load_tasks``:
    concurrent load-and-chunk tasks, each reserving ``load_cpus``.
    ``embedders``: actors embedding (each loads the model once), each reserving
    ``embedder_cpus`` and ``embedder_gpus`` (None: one GPU per actor when the
    cluster has GPUs, else none). ``batch_size``: sources per Ray Data batch.
    ``write``: ``"auto"`` lets ``writers`` worker actors write when the store
    declares ``concurrent_writers`` (pgvector), else the driver writes;
    ``"driver"`` forces the driver. ``env``: names of environment variables
    forwarded to the workers of a local cluster (e.g. the store's DSN variable).
    ``progress_bars``: Ray Data's per-stage bars on stderr.
    """

    address: str | None = None
    local_cpus: int | None = attrs.field(default=None, validator=attrs.validators.optional(_positive))
    load_tasks: int = attrs.field(default=2, validator=_positive)
    load_cpus: float = attrs.field(validator=_positive_float, default=1.0)
    embedders: int = attrs.field(default=1, validator=_positive)
    embedder_cpus: float = attrs.field(validator=_positive_float, default=1.0)
    embedder_gpus: float | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(0)))
    batch_size: int = attrs.field(default=16, validator=_positive)
    write: Literal["auto", "driver"] = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "driver")))
    writers: int = attrs.field(default=2, validator=_positive)
    writer_cpus: float = attrs.field(validator=_positive_float, default=0.25)
    env: tuple[str, ...] = ()
    progress_bars: bool = True
