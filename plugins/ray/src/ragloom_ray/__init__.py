"""ragloom-ray: ``[ingest] executor = "ray"`` runs an ingest on a Ray cluster (Ray Data).

The driver lists the sources and reads their stored states; tasks load and
chunk; an actor pool embeds; the store is written by worker actors when it
takes concurrent writers (pgvector), otherwise by the driver (DuckDB, memory).
``ray`` is imported only when an ingest runs.
"""

from __future__ import annotations

from ragloom_ray.config import RayExecutorConfig

__all__ = ["RayExecutorConfig"]
