"""ragloom's filter tree as Qdrant filters, and the payload fields those filters read.

Qdrant compares payload values with its own typing (an integer match never
sees ``2023.0``; ``True`` is not ``1`` only for some operators), so every
metadata value is also written as *filter fields* that make ragloom's
semantics exact (:func:`filter_fields`):

- ``k_<h>``: a typed token per scalar (``s:text``, ``n:2021`` for 2021 and
  2021.0, ``b:1``), matched by ``$eq`` / ``$ne`` / ``$in`` / ``$nin``;
- ``n_<h>``: the number (never a boolean), for ``$gt`` … ``$lte`` on numbers;
- ``e``: the keys with a non-null value, for ``$exists``.

``<h>`` is a hash of the metadata key, so a key with dots, quotes or SQL in it
is literal. Ordering comparisons against a *string* (``{"title": {"$lt":
"b"}}``) have no Qdrant equivalent: they are marked *residual*, the rest of
the filter narrows the candidates in Qdrant, and the plugin evaluates the
whole filter exactly on those candidates (:func:`ragloom.plugin.matches`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from qdrant_client import models

from ragloom.plugin import Condition, FilterError, FilterNode, FilterVisitor, walk

ORDERING = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}

#: matches every point / no point
ALL = models.Filter()
NONE = models.Filter(must_not=[models.Filter()])


def key_hash(key: str) -> str:
    """A payload-safe name for a metadata key."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def token(value: Any) -> str | None:
    """The typed equality token of a scalar (ints and integral floats share one), None for anything else."""
    if isinstance(value, bool):
        return "b:1" if value else "b:0"
    if isinstance(value, int):
        return f"n:{value}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return f"n:{int(value)}" if value.is_integer() else f"n:{value!r}"
    if isinstance(value, str):
        return "s:" + value
    return None


def filter_fields(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The payload fields the translated filters read, for one chunk's metadata."""
    fields: dict[str, Any] = {}
    present = []
    for key, value in metadata.items():
        if value is None:
            continue
        h = key_hash(key)
        present.append(h)
        typed = token(value)
        if typed is not None:
            fields[f"k_{h}"] = typed
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            fields[f"n_{h}"] = float(value)
    fields["e"] = present
    return fields


def is_residual(node: Condition) -> bool:
    """True for an ordering comparison against a string (evaluated by the plugin, not by Qdrant)."""
    return node.op in ORDERING and isinstance(node.value, str) and node.key != "tags"


def has_residual(node: FilterNode | None) -> bool:
    """True when some condition of the tree is residual."""
    return any(is_residual(c) for c in walk(node))


def _match(field: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchValue(value=value))


def _match_any(field: str, values: Sequence[str]) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchAny(any=list(values)))


def _membership(op: str, field: str, values: Sequence[str]) -> models.Filter:
    """``$eq``/``$in`` (positive) or ``$ne``/``$nin`` (negative) over string values of a keyword field."""
    positive = op in ("$eq", "$in")
    if not values:
        return NONE if positive else ALL
    condition = _match(field, values[0]) if len(values) == 1 else _match_any(field, values)
    return models.Filter(must=[condition]) if positive else models.Filter(must_not=[condition])


class ToQdrant(FilterVisitor[models.Filter]):
    """A parsed filter as a ``models.Filter``; residual conditions become ``ALL`` (a superset)."""

    def __init__(self) -> None:
        self.fields: set[str] = set()

    def visit_and(self, node: Any, items: Sequence[models.Filter]) -> models.Filter:
        return models.Filter(must=list(items))

    def visit_or(self, node: Any, items: Sequence[models.Filter]) -> models.Filter:
        return models.Filter(should=list(items))

    def visit_condition(self, node: Condition) -> models.Filter:
        op, value = node.op, node.value
        if op not in ("$eq", "$ne", "$in", "$nin", "$exists", *ORDERING):
            raise FilterError(f"the qdrant store cannot evaluate the operator {op!r}")
        values = list(value) if op in ("$in", "$nin") else [value]
        if node.key in ("tags", "source", "document_id"):
            return self._reserved(node.key, op, value, values)
        h = key_hash(node.key)
        if op == "$exists":
            self.fields.add("e")
            condition = _match("e", h)
            return models.Filter(must=[condition]) if value else models.Filter(must_not=[condition])
        if op in ORDERING:
            if isinstance(value, str):
                return ALL  # residual: checked exactly by the plugin on the candidates
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return NONE  # a boolean or null (a hand-built tree): ordered against nothing, as in memory
            self.fields.add(f"n_{h}")
            return models.Filter(must=[models.FieldCondition(key=f"n_{h}", range=models.Range(**{ORDERING[op]: float(value)}))])
        tokens = [t for t in (token(v) for v in values) if t is not None]
        self.fields.add(f"k_{h}")
        return _membership("$eq" if op == "$eq" else op, f"k_{h}", list(dict.fromkeys(tokens)))

    def _reserved(self, key: str, op: str, value: Any, values: list[Any]) -> models.Filter:
        if op == "$exists":
            if key != "tags":
                return ALL if value else NONE
            empty = models.IsEmptyCondition(is_empty=models.PayloadField(key="tags"))
            return models.Filter(must_not=[empty]) if value else models.Filter(must=[empty])
        if op in ORDERING:
            if key == "tags":
                raise FilterError(f"operator {op!r} is not defined for tags")
            return ALL if isinstance(value, str) else NONE  # a string ordering is residual; a number never compares to a string
        strings = [v for v in values if isinstance(v, str)]
        return _membership(op, key, list(dict.fromkeys(strings)))


def translate(node: FilterNode | None) -> tuple[models.Filter | None, set[str]]:
    """The Qdrant filter of ``node`` (None: no filter) and the payload fields it reads."""
    if node is None:
        return None, set()
    visitor = ToQdrant()
    return visitor.visit(node), visitor.fields
