"""Importing sentence-transformers and loading models from local files.

Loading never reaches the network unless the user opts in (``allow_download``):
models are opened with ``local_files_only=True``, so a hub name must already be
in the Hugging Face cache and a path must hold a saved model.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from ragloom.plugin import ConfigError, PluginError

INSTALL_HINT = (
    "the sentence-transformers package is not installed; install torch first "
    '(e.g. pip install torch), then pip install "ragloom-sentence-transformers[models]"'
)


def import_sentence_transformers() -> ModuleType:
    """The ``sentence_transformers`` module, or PluginError with an install hint."""
    try:
        import sentence_transformers
    except ImportError as exc:
        raise PluginError(INSTALL_HINT) from exc
    return sentence_transformers


def resolve_model(model: str, context: Any) -> str:
    """A model that exists as a path (relative to the config's folder) becomes that path; else a hub name."""
    resolve = getattr(context, "resolve_path", None)
    candidate = resolve(model) if callable(resolve) else Path(model).expanduser()
    if candidate.exists():
        return str(candidate)
    return model


def load_model(factory: Any, model: str, *, what: str, allow_download: bool, **options: Any) -> Any:
    """``factory(model, local_files_only=..., **options)``; failures become ConfigError naming the model."""
    try:
        return factory(model, local_files_only=not allow_download, **options)
    except Exception as exc:  # noqa: BLE001 - any loading failure is reported with the model name
        if Path(model).exists():
            reason = f"{what} model at {model!r} could not be loaded: {type(exc).__name__}: {exc}"
        elif not allow_download:
            reason = (
                f"{what} model {model!r} is not a local path and is not in the Hugging Face cache "
                f"({type(exc).__name__}: {exc}); give the path of a saved model, download it once, "
                "or set allow_download = true"
            )
        else:
            reason = f"{what} model {model!r} could not be loaded: {type(exc).__name__}: {exc}"
        raise ConfigError(reason) from exc
