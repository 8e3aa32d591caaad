"""``ragloom serve``: the pipeline as an HTTP API (Starlette + uvicorn, the ``ragloom[serve]`` extra).

:func:`create_app` lives in :mod:`ragloom.serve.app` (imported on use, so
``ragloom`` works without the extra).
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """The Starlette app over a pipeline: see :func:`ragloom.serve.app.create_app`."""
    from ragloom.serve.app import create_app as make

    return make(*args, **kwargs)
