"""Secrets, the cattrs converter and option structuring: a leaf module (it imports only errors).

Every component's options go through :func:`structure_options`: a TOML table
(or builder keywords) becomes the component's frozen attrs config class, with
errors such as ``expected an integer @ $.chunker.size`` and unknown keys
rejected with a did-you-mean. The converter is configured once, here; nothing
registers hooks on it at import time elsewhere. A config field may accept
other TOML spellings through its metadata: ``attrs.field(metadata={"aliases": ("lambda",)})``.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs
from cattrs.errors import (
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn

from ragloom.errors import ConfigError, short_repr

__all__ = ["Secret", "converter", "did_you_mean", "structure_options"]

_MISSING = object()
_UNION_ORIGINS = (typing.Union, getattr(types, "UnionType", typing.Union))  # X | Y is types.UnionType on 3.10+


# --------------------------------------------------------------------------- secrets


@attrs.frozen(repr=False)
class Secret:
    """A reference to an environment variable holding a secret: ``{ env = "NAME" }``.

    The value is read only by :meth:`get` (when the component is built) and is
    never shown in a repr, a log or an error.
    """

    env: str

    def get(self) -> str:
        """The secret's value; ConfigError when the variable is unset or empty."""
        value = os.environ.get(self.env)
        if not value:
            raise ConfigError(f"environment variable {self.env} is not set (it holds a secret this pipeline needs)")
        return value

    def __repr__(self) -> str:
        return f"Secret(env={self.env!r}, value=***)"

    __str__ = __repr__


def _structure_secret(value: Any, _type: Any) -> Secret:
    if isinstance(value, Secret):
        return value
    if isinstance(value, dict) and set(value) == {"env"} and isinstance(value["env"], str) and value["env"]:
        return Secret(value["env"])
    if isinstance(value, str):
        raise ValueError('secrets are never written in config; use a reference: { env = "NAME_OF_VARIABLE" }')
    raise ValueError('expected a secret reference { env = "NAME_OF_VARIABLE" }')


# --------------------------------------------------------------------------- converter


def _strict(kind: type) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {_type_name(kind)}")
        if not isinstance(value, kind):
            raise TypeError(f"expected {_type_name(kind)}")
        return value

    return structure


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (int, float, str, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Secret, _structure_secret)
    converter.register_structure_hook(Path, lambda v, _t: Path(_strict(str)(v, str)))
    converter.register_structure_hook_func(lambda tp: tp is Any, lambda v, _t: v)
    converter.register_structure_hook_factory(_has_aliases, lambda cls: _aliased_structure(cls, converter))
    return converter


def _aliases(cls: type) -> dict[str, str]:
    """``{alias: field name}`` from ``metadata={"aliases": (...)}`` on the fields of an attrs class."""
    return {alias: field.name for field in attrs.fields(cls) for alias in field.metadata.get("aliases", ())}


def _has_aliases(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp) and bool(_aliases(tp))


def _aliased_structure(cls: type, converter: cattrs.Converter) -> Any:
    """A structure function accepting each field's aliases (one spelling per field, not both)."""
    plain: Any = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True)
    aliases = _aliases(cls)

    def structure(value: Any, tp: type) -> Any:
        if isinstance(value, dict) and any(alias in value for alias in aliases):
            renamed = dict(value)
            for alias, name in aliases.items():
                if alias in renamed:
                    if name in renamed:
                        raise ValueError(f"give {alias!r} or {name!r}, not both")
                    renamed[name] = renamed.pop(alias)
            value = renamed
        return plain(value, tp)

    return structure


converter = _make_converter()


# --------------------------------------------------------------------------- messages


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...]) -> str:
    """``"; did you mean 'size'?"`` or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in _UNION_ORIGINS:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args)
    if origin in (list, tuple, typing.Sequence, set, frozenset):
        items = typing.get_args(tp)
        plural = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}
        return f"a list of {plural.get(items[0], _type_name(items[0]))}" if items else "a list"
    if origin is dict:
        return "a table"
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", Path: "a path", Secret: "a secret reference { env = ... }"}
    if tp in names:
        return names[tp]
    if attrs.has(tp):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def _describe(exc: BaseException, value: Any, path: str, expected: Any, lines: list[str]) -> None:
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for inner, note in with_notes:
            sub = value.get(note.name, _MISSING) if isinstance(value, dict) else _MISSING
            _describe(inner, sub, f"{path}.{note.name}", note.type, lines)
        for inner in without:
            if isinstance(inner, (ValueError, TypeError)) and not isinstance(inner, BaseValidationError):
                lines.append(f"{inner} @ {path}")  # an attrs validator of the class itself
            else:
                _describe(inner, value, path, expected, lines)
    elif isinstance(exc, IterableValidationError):
        item_notes, item_rest = exc.group_exceptions()
        for inner, item_note in item_notes:
            try:
                sub = value[item_note.index]
            except (TypeError, KeyError, IndexError):
                sub = _MISSING
            _describe(inner, sub, f"{path}[{item_note.index}]", item_note.type, lines)
        for inner in item_rest:
            _describe(inner, value, path, expected, lines)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = [field.name for field in attrs.fields(exc.cl)]
        for key in sorted(exc.extra_fields):
            allowed_text = ", ".join(allowed) if allowed else "none"
            lines.append(f"unknown key {key!r} @ {path}{did_you_mean(key, allowed)} (allowed: {allowed_text})")
    elif isinstance(exc, BaseValidationError):
        for inner in exc.exceptions:
            _describe(inner, value, path, expected, lines)
    elif isinstance(exc, KeyError) and value is _MISSING:
        lines.append(f"missing required key @ {path}" + (f" (expected {_type_name(expected)})" if expected is not None else ""))
    else:
        message = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)
        if typing.get_origin(expected) is Literal:
            message = ""
        shown = "" if value is _MISSING else f"invalid value {short_repr(value)} @ {path}: "
        if not shown:
            shown = f"invalid @ {path}: "
        if expected is not None and not message.startswith("expected"):
            message = f"{message}; expected {_type_name(expected)}" if message else f"expected {_type_name(expected)}"
        lines.append(shown + (message or f"expected {_type_name(expected)}"))


def _is_sequence_type(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in _UNION_ORIGINS:
        return any(_is_sequence_type(arg) for arg in typing.get_args(tp) if arg is not type(None))
    return origin in (list, tuple, typing.Sequence, set, frozenset) or tp in (list, tuple)


def _refuse_strings_for_lists(config_cls: type | None, options: dict[str, Any], path: str) -> None:
    """A string where a list is expected would be split into characters by cattrs: refuse it."""
    if config_cls is None or not attrs.has(config_cls):
        return
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations: leave it to cattrs
        return
    problems = [
        f"invalid value {short_repr(options[field.name])} @ {path}.{field.name}: expected {_type_name(hints[field.name])}"
        for field in attrs.fields(config_cls)
        if field.name in options and isinstance(options[field.name], str) and field.name in hints and _is_sequence_type(hints[field.name])
    ]
    if problems:
        raise ConfigError("; ".join(problems), lines=problems)


def structure_options(config_cls: type | None, options: dict[str, Any], *, path: str) -> Any:
    """Validate a component's options into its config class (``None``: no options allowed)."""
    if not isinstance(options, dict):
        raise ConfigError(f"invalid value {short_repr(options)} @ {path}: expected a table")
    _refuse_strings_for_lists(config_cls, options, path)
    if config_cls is None:
        if options:
            keys = ", ".join(sorted(options))
            raise ConfigError(f"unknown key(s) {keys} @ {path}: this component takes no options")
        return None
    try:
        return converter.structure(options, config_cls)
    except BaseValidationError as exc:
        lines: list[str] = []
        _describe(exc, options, path, config_cls, lines)
        raise ConfigError("; ".join(lines), lines=lines) from None
    except (ValueError, TypeError) as exc:  # attrs validators run in __init__
        raise ConfigError(f"{exc} @ {path}") from None


