"""The metadata filter language shared by every store.

A filter is a dict, parsed and validated once here into a small tree that
each store translates (SQL for DuckDB / PostgreSQL, a predicate for memory)::

    {"category": "support"}                          equality
    {"year": {"$gte": 2020, "$lt": 2024}}            comparison (several ops: and)
    {"lang": {"$in": ["en", "de"]}}                  $in / $nin
    {"draft": {"$ne": True}}                         $ne (matches a missing key too)
    {"author": {"$exists": True}}                    $exists
    {"$or": [{"a": 1}, {"b": 2}]}                    $and / $or (non-empty lists)
    {"source": "/docs/a.md"}                         reserved: source, document_id
    {"tags": "public"}                               reserved: tags — equality means
                                                     "has the tag", $in "has any"

Several keys at one level combine with ``$and``. Semantics for a missing
metadata key: ``$eq``, ``$in`` and comparisons are false; ``$ne`` and ``$nin``
are true. Comparisons between a number and a string are false, never an error.
Booleans are not numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, Union

import attrs

from ragloom.errors import FilterError, short_repr

RESERVED_KEYS = ("source", "document_id", "tags")
COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
MEMBERSHIP = ("$in", "$nin")
OPERATORS = COMPARISONS + MEMBERSHIP + ("$exists",)
LOGICAL = ("$and", "$or")
ORDERING = ("$gt", "$gte", "$lt", "$lte")

#: Deepest nesting of ``$and`` / ``$or`` a filter may have (hostile input must not exhaust the stack).
MAX_DEPTH = 32

_show = short_repr


@attrs.frozen
class Condition:
    """``key <op> value``; ``key`` is a metadata key or a reserved key."""

    key: str
    op: str
    value: Any

    @property
    def reserved(self) -> bool:
        """True for ``source``, ``document_id`` and ``tags``."""
        return self.key in RESERVED_KEYS


@attrs.frozen
class And:
    """All items match."""

    items: tuple[FilterNode, ...]


@attrs.frozen
class Or:
    """At least one item matches."""

    items: tuple[FilterNode, ...]


FilterNode = Union[Condition, And, Or]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and not (isinstance(value, float) and value != value)


def _check_value(key: str, op: str, value: Any, where: str) -> Any:
    if op == "$exists":
        if not isinstance(value, bool):
            raise FilterError(f"{where}: $exists takes true or false, got {_show(value)}")
        return value
    if op in MEMBERSHIP:
        if not isinstance(value, (list, tuple)) or not value:
            raise FilterError(f"{where}: {op} takes a non-empty list of values, got {_show(value)}")
        for item in value:
            if not _is_scalar(item):
                raise FilterError(f"{where}: {op} values must be strings, numbers or booleans, got {_show(item)}")
        return tuple(value)
    if not _is_scalar(value):
        raise FilterError(f"{where}: {op} takes a string, number or boolean, got {_show(value)}")
    if op in ORDERING:
        if isinstance(value, bool):
            raise FilterError(f"{where}: {op} takes a number or string, got a boolean")
        if key == "tags":
            raise FilterError(f"{where}: {op} is not defined for tags")
    return value


def _parse_key(key: str, spec: Any, where: str) -> FilterNode:
    if not isinstance(key, str) or not key.strip():
        raise FilterError(f"{where}: filter keys must be non-empty strings, got {_show(key)}")
    if isinstance(spec, Mapping):
        if not spec:
            raise FilterError(f"{where}.{key}: empty operator table")
        conditions = []
        for op, value in spec.items():
            if op not in OPERATORS:
                hint = ""
                if isinstance(op, str) and not op.startswith("$"):
                    hint = " (nested metadata is not filterable; use a flat key)"
                raise FilterError(
                    f"{where}.{key}: unknown operator {_show(op)}{hint}; known: {', '.join(OPERATORS)}"
                )
            conditions.append(Condition(key, op, _check_value(key, op, value, f"{where}.{key}")))
        return conditions[0] if len(conditions) == 1 else And(tuple(conditions))
    return Condition(key, "$eq", _check_value(key, "$eq", spec, f"{where}.{key}"))


def _parse(spec: Any, where: str, depth: int = 0) -> FilterNode:
    if depth > MAX_DEPTH:
        raise FilterError(f"filter: nested deeper than {MAX_DEPTH} levels")
    if not isinstance(spec, Mapping):
        raise FilterError(f"{where}: a filter is a table / dict, got {_show(spec)}")
    if not spec:
        raise FilterError(f"{where}: empty filter")
    nodes: list[FilterNode] = []
    for key, value in spec.items():
        if isinstance(key, str) and key.startswith("$"):
            if key not in LOGICAL:
                raise FilterError(f"{where}: unknown operator {_show(key)} at this level; use $and or $or, or put it under a key")
            if not isinstance(value, (list, tuple)) or not value:
                raise FilterError(f"{where}.{key}: takes a non-empty list of filters")
            items = tuple(_parse(item, f"{where}.{key}[{i}]", depth + 1) for i, item in enumerate(value))
            nodes.append(And(items) if key == "$and" else Or(items))
        else:
            nodes.append(_parse_key(key, value, where))
    return nodes[0] if len(nodes) == 1 else And(tuple(nodes))


def parse_filter(spec: Any) -> FilterNode | None:
    """Validate a filter dict into a tree; ``None`` or an already parsed tree pass through."""
    if spec is None:
        return None
    if isinstance(spec, (Condition, And, Or)):
        return spec
    return _parse(spec, "filter")


def combine(*filters: Any) -> FilterNode | None:
    """``$and`` of the given filters, ignoring ``None``."""
    nodes = [parse_filter(f) for f in filters]
    present = [n for n in nodes if n is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else And(tuple(present))


# --------------------------------------------------------------------------- evaluation

_MISSING = object()


def _compare(op: str, actual: Any, expected: Any) -> bool:
    if actual is _MISSING:
        return op in ("$ne", "$nin")
    if op == "$eq":
        return _same(actual, expected)
    if op == "$ne":
        return not _same(actual, expected)
    if op == "$in":
        return any(_same(actual, e) for e in expected)
    if op == "$nin":
        return not any(_same(actual, e) for e in expected)
    if isinstance(actual, bool) or isinstance(expected, bool):
        return False
    numeric = isinstance(actual, (int, float)) and isinstance(expected, (int, float))
    textual = isinstance(actual, str) and isinstance(expected, str)
    if not (numeric or textual):
        return False
    if op == "$gt":
        return actual > expected
    if op == "$gte":
        return actual >= expected
    if op == "$lt":
        return actual < expected
    return actual <= expected


def _same(a: Any, b: Any) -> bool:
    """Equality without Python's cross-type coercions, except int == float."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return type(a) is type(b) and a == b


def _match_tags(op: str, tags: tuple[str, ...], value: Any) -> bool:
    if op == "$exists":
        return bool(tags) == value
    if op == "$eq":
        return value in tags
    if op == "$ne":
        return value not in tags
    if op == "$in":
        return any(v in tags for v in value)
    return not any(v in tags for v in value)  # $nin


def matches(node: FilterNode | None, *, metadata: Mapping[str, Any], source: str, document_id: str, tags: tuple[str, ...]) -> bool:
    """Evaluate a parsed filter against one record (the memory store's path)."""
    if node is None:
        return True
    if isinstance(node, And):
        return all(matches(n, metadata=metadata, source=source, document_id=document_id, tags=tags) for n in node.items)
    if isinstance(node, Or):
        return any(matches(n, metadata=metadata, source=source, document_id=document_id, tags=tags) for n in node.items)
    if node.key == "tags":
        return _match_tags(node.op, tags, node.value)
    if node.key == "source":
        actual: Any = source
    elif node.key == "document_id":
        actual = document_id
    else:
        actual = metadata.get(node.key, _MISSING)
    if node.op == "$exists":
        return (actual is not _MISSING and actual is not None) == node.value
    return _compare(node.op, actual, node.value)


def compile_predicate(node: FilterNode | None) -> Callable[..., bool]:
    """A reusable predicate ``(metadata, source, document_id, tags) -> bool``.

    A hand-built tree (``parse_filter`` passes one through) with an operator the
    language does not have is a FilterError here, as in the SQL stores.
    """
    for condition in walk(node):
        if condition.op not in OPERATORS:
            raise FilterError(f"the memory store cannot evaluate operator {condition.op!r} (key {condition.key!r})")
        if condition.key == "tags" and condition.op in ORDERING:
            raise FilterError(f"operator {condition.op!r} is not defined for tags")

    def predicate(metadata: Mapping[str, Any], source: str, document_id: str, tags: tuple[str, ...]) -> bool:
        return matches(node, metadata=metadata, source=source, document_id=document_id, tags=tags)

    return predicate


def walk(node: FilterNode | None) -> Iterator[Condition]:
    """Every Condition in the tree (stores use it to reject unsupported operators)."""
    if node is None:
        return
    if isinstance(node, Condition):
        yield node
    elif isinstance(node, (And, Or)):
        for item in node.items:
            yield from walk(item)
    else:
        raise FilterError(f"not a parsed filter: {_show(node)}")


T = TypeVar("T")


class FilterVisitor(Generic[T]):
    """Translate a parsed filter tree bottom-up (into SQL, a query DSL, a predicate …).

    Subclass it and implement the three ``visit_*`` methods; :meth:`visit`
    walks the tree in order (children first, left to right), so parameters a
    translation binds come out in the order of the text it builds::

        class ToText(FilterVisitor[str]):
            def visit_condition(self, node): return f"{node.key} {node.op} {node.value!r}"
            def visit_and(self, node, items): return "(" + " AND ".join(items) + ")"
            def visit_or(self, node, items): return "(" + " OR ".join(items) + ")"

    A condition the target cannot express should raise :class:`ragloom.errors.FilterError`.
    """

    def visit(self, node: FilterNode) -> T:
        """The translation of ``node``."""
        if isinstance(node, And):
            return self.visit_and(node, [self.visit(item) for item in node.items])
        if isinstance(node, Or):
            return self.visit_or(node, [self.visit(item) for item in node.items])
        if isinstance(node, Condition):
            return self.visit_condition(node)
        raise FilterError(f"not a parsed filter: {_show(node)}")

    def visit_condition(self, node: Condition) -> T:
        """One ``key <op> value`` (``node.reserved`` for source, document_id, tags)."""
        raise NotImplementedError

    def visit_and(self, node: And, items: Sequence[T]) -> T:
        """All of ``items`` (the translated children)."""
        raise NotImplementedError

    def visit_or(self, node: Or, items: Sequence[T]) -> T:
        """Any of ``items`` (the translated children)."""
        raise NotImplementedError
