"""Per-query retriever options: a retriever answering one query with some of its config changed.

``Pipeline.query(text, lambda_mult=0.2)`` reaches the MMR retriever's
``lambda_mult`` (``weights=``, ``mode=``, ``candidates=`` through ``options=``
for the hybrid one ...) without touching the configured retriever: the options
are validated into the retriever's own config class exactly like TOML (aliases
such as ``lambda`` included, unknown names refused with a did-you-mean), and the
query runs on a shallow copy carrying the changed config. A retriever that
needs more than a new config offers ``with_options(**options) -> Retriever``
itself, which is then used instead.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

from ragloom.errors import ConfigError
from ragloom.protocols import Retriever
from ragloom.structuring import did_you_mean, structure_options

#: Options every retriever takes as ``retrieve`` arguments (passed to ``query`` itself).
CALL_OPTIONS = frozenset({"top_k", "threshold", "filter"})


def retriever_with_options(retriever: Retriever, options: Mapping[str, Any], *, name: str) -> Retriever:
    """``retriever`` for one query with ``options`` over its config (``name``: for errors).

    :raises ConfigError: an option the retriever does not know (named), or a bad value.
    """
    if not options:
        return retriever
    custom = getattr(retriever, "with_options", None)
    if callable(custom):
        return custom(**options)  # type: ignore[no-any-return]
    config = getattr(retriever, "config", None)
    if config is None or not attrs.has(type(config)):
        raise ConfigError(f"unknown query option(s) {', '.join(map(repr, sorted(options)))}: the {name} retriever takes no per-query options")
    cls = type(config)
    fields = {field.name for field in attrs.fields(cls) if field.init}
    aliases = {alias: field.name for field in attrs.fields(cls) for alias in field.metadata.get("aliases", ())}
    allowed = sorted((fields | set(aliases)) - CALL_OPTIONS)
    names: dict[str, str] = {}
    for key in options:
        field = aliases.get(key, key)
        if field in CALL_OPTIONS:
            raise ConfigError(f"query option {key!r}: pass it as {field}= of query() itself")
        if field not in fields:
            raise ConfigError(
                f"unknown query option {key!r} for the {name} retriever{did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})"
            )
        names[key] = field
    where = f"query options of the {name} retriever"
    partial = structure_options(cls, dict(options), path=where)
    try:
        changed = attrs.evolve(config, **{field: getattr(partial, field) for field in names.values()})
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{exc} @ {where}") from None
    clone = copy.copy(retriever)
    clone.config = changed  # type: ignore[attr-defined]
    return clone
