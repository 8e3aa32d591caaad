"""Agent tools in the shapes vendors' APIs take: OpenAI (strict JSON Schema) and Anthropic (``input_schema``).

::

    tools = [to_openai(t) for t in (search, ingest)]   # chat.completions(tools=...)
    tools = [to_anthropic(t) for t in (search, ingest)]  # messages.create(tools=...)

OpenAI's strict mode wants every property listed in ``required``,
``additionalProperties: false`` on every object, and no free-form objects: an
optional property becomes nullable (``["integer", "null"]``), a free-form
object (a metadata filter) becomes a JSON string, and the keywords strict mode
rejects are moved into the description. The tools accept both forms, so one
handler answers either vendor: see :func:`call_tool`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from ragloom.tools import Tool

_STRICT_UNSUPPORTED = ("default", "minimum", "maximum", "minLength", "maxLength", "pattern", "format")


def strict_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` rewritten for OpenAI's strict mode (see the module docstring)."""
    return _strict(copy.deepcopy(parameters), required=True)


def _strict(schema: dict[str, Any], *, required: bool) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "object" and "properties" not in schema:  # free-form object: a JSON string instead
        described = schema.get("description", "")
        schema = {"type": "string", "description": (described + " (a JSON object, as a string)").strip()}
        kind = "string"
    notes = [f"{key} {schema.pop(key)}" for key in _STRICT_UNSUPPORTED if key in schema]
    if notes:
        schema["description"] = (schema.get("description", "") + f" ({', '.join(notes)})").strip()
    if kind == "object":
        properties = schema["properties"]
        needed = set(schema.get("required", ()))
        schema["properties"] = {name: _strict(dict(sub), required=name in needed) for name, sub in properties.items()}
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    if not required:
        kinds: list[str] = [kind] if isinstance(kind, str) else list(kind or [])
        schema["type"] = [*kinds, "null"]
    return schema


def to_openai(tool: Tool, *, strict: bool = True) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters, strict}}``."""
    parameters = strict_schema(tool.parameters) if strict else copy.deepcopy(tool.parameters)
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters, "strict": strict},
    }


def to_anthropic(tool: Tool) -> dict[str, Any]:
    """``{"name", "description", "input_schema"}`` (Anthropic's Messages API)."""
    return {"name": tool.name, "description": tool.description, "input_schema": copy.deepcopy(tool.parameters)}


def call_tool(tools: Iterable[Tool], name: str, arguments: dict[str, Any] | str) -> str:
    """Run the tool a model called and return its answer as JSON text (errors included, for the model)."""
    for tool in tools:
        if tool.name == name:
            return json.dumps(tool(arguments), ensure_ascii=False)
    return json.dumps({"error": f"no tool named {name!r}"})
