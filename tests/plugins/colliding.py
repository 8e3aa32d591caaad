"""Test plugin: claims the built-in chunker name ``recursive``."""

from ragloom import hookimpl


@hookimpl
def register_chunkers(register):  # type: ignore[no-untyped-def]
    register("recursive", lambda config, context: None)
