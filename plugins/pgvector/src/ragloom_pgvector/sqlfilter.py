"""Translate a parsed ragloom filter into a PostgreSQL predicate on JSONB with bound parameters.

Keys and values are always parameters (``metadata -> %s``), never SQL text, so
neither can inject anything. The semantics are those of
:func:`ragloom.filters.matches`: types must agree (booleans are not numbers,
``2 == 2.0``), a missing key fails ``$eq``/``$in``/comparisons and passes
``$ne``/``$nin``, a JSON ``null`` does not ``$exists``.
"""

from __future__ import annotations

from typing import Any

from ragloom.plugin import And, Condition, FilterError, FilterNode, Or

_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class _Builder:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return "%s"

    def _value(self, key: str) -> str:
        return f"({self.prefix}metadata -> {self.bind(key)}::text)"

    def _text(self, key: str) -> str:
        return f"({self.prefix}metadata ->> {self.bind(key)}::text)"

    def _typed(self, key: str, json_type: str) -> str:
        return f"jsonb_typeof({self._value(key)}) = '{json_type}'"

    def _metadata_eq(self, key: str, value: Any) -> str:
        if isinstance(value, bool):
            return f"coalesce({self._value(key)} = {self.bind('true' if value else 'false')}::jsonb, false)"
        if isinstance(value, (int, float)):
            # CASE guards the cast: only a JSON number is ever cast to a number
            return f"coalesce(CASE WHEN {self._typed(key, 'number')} THEN {self._text(key)}::float8 = {self.bind(float(value))}::float8 END, false)"
        return f"coalesce({self._typed(key, 'string')} AND {self._text(key)} = {self.bind(str(value))}::text, false)"

    def _metadata_order(self, key: str, op: str, value: Any) -> str:
        sql_op = _ORDER[op]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return f"coalesce(CASE WHEN {self._typed(key, 'number')} THEN {self._text(key)}::float8 {sql_op} {self.bind(float(value))}::float8 END, false)"
        if isinstance(value, str):
            return f'coalesce({self._typed(key, "string")} AND {self._text(key)} COLLATE "C" {sql_op} {self.bind(value)}::text, false)'
        return "false"

    def metadata_condition(self, node: Condition) -> str:
        key, op, value = node.key, node.op, node.value
        if op == "$exists":
            present = f"coalesce(jsonb_typeof({self._value(key)}) <> 'null', false)"
            return present if value else f"NOT {present}"
        if op == "$eq":
            return self._metadata_eq(key, value)
        if op == "$ne":
            return f"NOT {self._metadata_eq(key, value)}"
        if op in ("$in", "$nin"):
            any_of = "(" + " OR ".join(self._metadata_eq(key, item) for item in value) + ")" if value else "false"
            return any_of if op == "$in" else f"NOT {any_of}"
        if op in _ORDER:
            return self._metadata_order(key, op, value)
        raise FilterError(f"the pgvector store cannot evaluate operator {op!r} (key {key!r})")

    def text_column_condition(self, column: str, node: Condition) -> str:
        op, value = node.op, node.value
        column = self.prefix + column
        if op == "$exists":
            return "true" if value else "false"
        if op in ("$eq", "$ne"):
            if not isinstance(value, str):
                return "false" if op == "$eq" else "true"
            return f"{column} {'=' if op == '$eq' else '<>'} {self.bind(value)}::text"
        if op in ("$in", "$nin"):
            strings = [v for v in value if isinstance(v, str)]
            if not strings:
                return "false" if op == "$in" else "true"
            inner = f"{column} = ANY({self.bind(strings)}::text[])"
            return inner if op == "$in" else f"NOT {inner}"
        if op in _ORDER:
            if not isinstance(value, str):
                return "false"
            return f'{column} COLLATE "C" {_ORDER[op]} {self.bind(value)}::text'
        raise FilterError(f"the pgvector store cannot evaluate operator {op!r} (key {node.key!r})")

    def tags_condition(self, node: Condition) -> str:
        op, value = node.op, node.value
        tags = self.prefix + "tags"
        if op == "$exists":
            return f"(cardinality({tags}) > 0) = {self.bind(bool(value))}::boolean"
        if op in ("$eq", "$ne"):
            if not isinstance(value, str):
                return "false" if op == "$eq" else "true"
            inner = f"{self.bind(value)}::text = ANY({tags})"
            return inner if op == "$eq" else f"NOT {inner}"
        if op in ("$in", "$nin"):
            strings = [v for v in value if isinstance(v, str)]
            if not strings:
                return "false" if op == "$in" else "true"
            inner = f"{tags} && {self.bind(strings)}::text[]"
            return inner if op == "$in" else f"NOT {inner}"
        raise FilterError(f"operator {op!r} is not defined for tags")

    def node(self, node: FilterNode) -> str:
        if isinstance(node, And):
            return "(" + " AND ".join(self.node(item) for item in node.items) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(self.node(item) for item in node.items) + ")"
        if not isinstance(node, Condition):
            raise FilterError(f"not a parsed filter: {node!r}")
        if node.key == "tags":
            return "(" + self.tags_condition(node) + ")"
        if node.key in ("source", "document_id"):
            return "(" + self.text_column_condition(node.key, node) + ")"
        return "(" + self.metadata_condition(node) + ")"


def filter_sql(node: FilterNode | None, *, prefix: str = "") -> tuple[str, list[Any]]:
    """``(sql, params)`` of a predicate with ``%s`` placeholders; ``("true", [])`` for no filter.

    ``prefix`` qualifies the columns (``"c."``).
    """
    if node is None:
        return "true", []
    builder = _Builder(prefix)
    return builder.node(node), builder.params
