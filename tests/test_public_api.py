"""The public API: one sorted, complete __all__; errors form one tree."""

from __future__ import annotations

import inspect

import ragloom
from ragloom import errors


def test_all_is_sorted_and_complete() -> None:
    assert ragloom.__all__ == sorted(ragloom.__all__)
    public = {name for name in dir(ragloom) if not name.startswith("_") and not inspect.ismodule(getattr(ragloom, name))}
    assert public == set(ragloom.__all__)


def test_every_error_is_exported_and_rooted() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, Exception) and c.__module__ == errors.__name__]
    for cls in classes:
        assert issubclass(cls, ragloom.RagloomError), cls
        assert cls.__name__ in ragloom.__all__, cls
        assert cls.__name__ in errors.__doc__, f"{cls.__name__} missing from the tree in errors.py's docstring"
    assert issubclass(ragloom.ConfigError, ValueError) and issubclass(ragloom.FilterError, ValueError)
    assert issubclass(ragloom.BlockedAddressError, ragloom.WebLoaderError)
    assert issubclass(ragloom.DimensionMismatchError, ragloom.StoreError)


def test_loader_error_names_source_and_position() -> None:
    error = ragloom.LoaderError("bad line", source="/data/x.jsonl", position="line 7")
    assert str(error) == "/data/x.jsonl (line 7): bad line"
    assert (error.source, error.position, error.reason) == ("/data/x.jsonl", "line 7", "bad line")
