"""Test plugin: an embedder whose factory uses its config and the build context."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ragloom import hookimpl


@attrs.frozen(kw_only=True)
class ShoutConfig:
    dim: int = 16


class ShoutEmbedder:
    def __init__(self, dim: int, base_dir: Any):
        self.dim = dim
        self.batch_size = 8
        self.model_id = f"shout-{dim}"
        self.base_dir = base_dir

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, len(text) % self.dim] = 1.0
        return out

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.embed_documents([text])[0]


@hookimpl
def register_embedders(register):  # type: ignore[no-untyped-def]
    register("shout", lambda config, context: ShoutEmbedder(config.dim, context.base_dir), config=ShoutConfig)
