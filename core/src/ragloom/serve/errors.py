"""Exceptions as JSON answers: ``{"error", "type", "source"}`` with a fitting HTTP status."""

from __future__ import annotations

import logging
from typing import Any

from ragloom.errors import ConfigError, DimensionMismatchError, FilterError, LoaderError, RagloomError

logger = logging.getLogger("ragloom.serve")


class HTTPError(RagloomError):
    """An error the server answers on purpose (bad request, auth, not found …)."""

    def __init__(self, status: int, message: str, *, source: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.status = status
        self.source = source
        self.kind = kind or type(self).__name__


def error_body(exc: BaseException, *, kind: str | None = None) -> dict[str, Any]:
    """The JSON fields of an error answer (the CLI's ``--json`` error fields)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return {"error": message, "type": kind or getattr(exc, "kind", None) or type(exc).__name__, "source": getattr(exc, "source", None)}


def status_for(exc: BaseException) -> int:
    """HTTP status of an exception raised while serving a request."""
    if isinstance(exc, HTTPError):
        return exc.status
    if type(exc).__name__ == "ConfinementError":
        return 403
    if isinstance(exc, DimensionMismatchError):
        return 500
    if isinstance(exc, (ConfigError, FilterError, ValueError, TypeError)):
        text = str(exc)
        return 403 if "outside the folders" in text or "not allowed" in text else 400
    if isinstance(exc, LoaderError):
        return 422
    if isinstance(exc, RagloomError):
        return 502 if type(exc).__name__ in ("EmbeddingError", "LLMError", "RerankError") else 500
    logger.exception("unexpected error while serving a request", exc_info=exc)
    return 500
