"""Translate a parsed ragloom filter into a DuckDB SQL predicate with bound parameters.

Metadata lives in a JSON column; a key is addressed with a JSON pointer
(``/key`` with ``~`` and ``/`` escaped) passed as a parameter, so neither keys
nor values are ever interpolated into the SQL text. The semantics are those of
:func:`ragloom.filters.matches`: types must agree (booleans are not numbers,
``2 == 2.0``), a missing key fails ``$eq``/``$in``/comparisons and passes
``$ne``/``$nin``, a JSON ``null`` does not ``$exists``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragloom.plugin import And, Condition, FilterError, FilterNode, FilterVisitor, Or

_NUMERIC_TYPES = "('BIGINT', 'UBIGINT', 'DOUBLE', 'HUGEINT')"


def json_pointer(key: str) -> str:
    """RFC 6901 pointer to a top-level key."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


class _Builder(FilterVisitor[str]):
    def __init__(self, metadata_column: str):
        self.metadata = metadata_column
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    # ------------------------------------------------------------------ metadata keys

    def _json_type(self, pointer: str) -> str:
        return f"json_type({self.metadata}, {self.bind(pointer)})"

    def _metadata_eq(self, pointer: str, value: Any) -> str:
        if isinstance(value, bool):
            return (
                f"coalesce({self._json_type(pointer)} = 'BOOLEAN' "
                f"AND json_extract_string({self.metadata}, {self.bind(pointer)}) = {self.bind('true' if value else 'false')}, false)"
            )
        if isinstance(value, (int, float)):
            return (
                f"coalesce({self._json_type(pointer)} IN {_NUMERIC_TYPES} "
                f"AND TRY_CAST(json_extract_string({self.metadata}, {self.bind(pointer)}) AS DOUBLE) = {self.bind(float(value))}, false)"
            )
        return (
            f"coalesce({self._json_type(pointer)} = 'VARCHAR' "
            f"AND json_extract_string({self.metadata}, {self.bind(pointer)}) = {self.bind(str(value))}, false)"
        )

    def _metadata_order(self, pointer: str, op: str, value: Any) -> str:
        sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (
                f"coalesce({self._json_type(pointer)} IN {_NUMERIC_TYPES} "
                f"AND TRY_CAST(json_extract_string({self.metadata}, {self.bind(pointer)}) AS DOUBLE) {sql_op} {self.bind(float(value))}, false)"
            )
        if isinstance(value, str):
            return (
                f"coalesce({self._json_type(pointer)} = 'VARCHAR' "
                f"AND json_extract_string({self.metadata}, {self.bind(pointer)}) {sql_op} {self.bind(value)}, false)"
            )
        return "false"  # a boolean or null (a hand-built tree): ordered against nothing

    def metadata_condition(self, node: Condition) -> str:
        pointer = json_pointer(node.key)
        op, value = node.op, node.value
        if op == "$exists":
            present = f"coalesce({self._json_type(pointer)} NOT IN ('NULL'), false)"
            return present if value else f"NOT {present}"
        if op == "$eq":
            return self._metadata_eq(pointer, value)
        if op == "$ne":
            return f"NOT {self._metadata_eq(pointer, value)}"
        if op in ("$in", "$nin"):
            any_of = "(" + " OR ".join(self._metadata_eq(pointer, item) for item in value) + ")" if value else "false"
            return any_of if op == "$in" else f"NOT {any_of}"
        if op in ("$gt", "$gte", "$lt", "$lte"):
            return self._metadata_order(pointer, op, value)
        raise FilterError(f"the duckdb store cannot evaluate operator {op!r} (key {node.key!r})")

    # ------------------------------------------------------------------ reserved keys

    def text_column_condition(self, column: str, node: Condition) -> str:
        op, value = node.op, node.value
        if op == "$exists":
            return "true" if value else "false"
        if op in ("$eq", "$ne"):
            if not isinstance(value, str):
                return "false" if op == "$eq" else "true"
            return f"{column} {'=' if op == '$eq' else '<>'} {self.bind(value)}"
        if op in ("$in", "$nin"):
            strings = [v for v in value if isinstance(v, str)]
            if not strings:
                return "false" if op == "$in" else "true"
            inner = f"list_contains({self.bind(strings)}::VARCHAR[], {column})"
            return inner if op == "$in" else f"NOT {inner}"
        if op in ("$gt", "$gte", "$lt", "$lte"):
            if not isinstance(value, str):
                return "false"
            sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
            return f"{column} {sql_op} {self.bind(value)}"
        raise FilterError(f"the duckdb store cannot evaluate operator {op!r} (key {node.key!r})")

    def tags_condition(self, node: Condition) -> str:
        op, value = node.op, node.value
        if op == "$exists":
            return f"(len(tags) > 0) = {self.bind(bool(value))}"
        if op in ("$eq", "$ne"):
            if not isinstance(value, str):
                return "false" if op == "$eq" else "true"
            inner = f"list_contains(tags, {self.bind(value)})"
            return inner if op == "$eq" else f"NOT {inner}"
        if op in ("$in", "$nin"):
            strings = [v for v in value if isinstance(v, str)]
            if not strings:
                return "false" if op == "$in" else "true"
            inner = f"list_has_any(tags, {self.bind(strings)}::VARCHAR[])"
            return inner if op == "$in" else f"NOT {inner}"
        raise FilterError(f"operator {op!r} is not defined for tags")

    # ------------------------------------------------------------------ tree

    def visit_and(self, node: And, items: Sequence[str]) -> str:
        return "(" + " AND ".join(items) + ")"

    def visit_or(self, node: Or, items: Sequence[str]) -> str:
        return "(" + " OR ".join(items) + ")"

    def visit_condition(self, node: Condition) -> str:
        if node.key == "tags":
            return "(" + self.tags_condition(node) + ")"
        if node.key == "source":
            return "(" + self.text_column_condition("source", node) + ")"
        if node.key == "document_id":
            return "(" + self.text_column_condition("document_id", node) + ")"
        return "(" + self.metadata_condition(node) + ")"


def filter_sql(node: FilterNode | None, *, metadata_column: str = "metadata") -> tuple[str, list[Any]]:
    """``(sql, params)`` of a predicate; ``("true", [])`` for no filter."""
    if node is None:
        return "true", []
    builder = _Builder(metadata_column)
    return builder.visit(node), builder.params
