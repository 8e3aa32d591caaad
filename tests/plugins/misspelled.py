"""Test plugin: a hook implementation with a typo in its name."""

from ragloom import hookimpl


@hookimpl
def register_chunker(register):  # type: ignore[no-untyped-def]  # missing "s"
    register("x", lambda config, context: None)
