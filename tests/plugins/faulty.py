"""Test plugin: a third-party reranker with bugs (it declares no ``strict`` option of its own)."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ragloom import hookimpl


@attrs.frozen(kw_only=True)
class FaultyConfig:
    top_n: int = 3
    mode: Literal["raise", "garbage", "fine"] = "raise"


class Faulty:
    """Reranker: raises a KeyError (a bug), answers something that is not a list of Results, or reverses."""

    def __init__(self, config: FaultyConfig):
        self.config = config
        self.top_n = config.top_n
        self.calls = 0

    def rerank(self, query: str, results: Any, top_n: int | None = None) -> Any:
        self.calls += 1
        if self.config.mode == "raise":
            return {}["score"]  # a plugin bug: KeyError
        if self.config.mode == "garbage":
            return "not a list"
        return list(reversed(results))[: top_n or self.top_n]


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    register("faulty", lambda config, context: Faulty(config), config=FaultyConfig)
