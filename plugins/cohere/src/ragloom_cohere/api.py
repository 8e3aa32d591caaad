"""What the Cohere reranker and embedder share: connection options and the authenticated POST.

Calls go through ragloom's :class:`~ragloom.plugin.JSONClient`, which retries 429 and
5xx answers, timeouts and connection errors with exponential backoff, honours
``Retry-After``, and raises the caller's error class with Cohere's own message
(``{"message": ...}``) and the status code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ragloom.plugin import HTTPOptions, JSONClient, RagloomError, Secret, check_http_url

if TYPE_CHECKING:  # httpx is imported when a component is built: plugin discovery stays light
    import httpx

DEFAULT_BASE_URL = "https://api.cohere.com"
DEFAULT_API_KEY_ENV = "COHERE_API_KEY"


@attrs.frozen(kw_only=True)
class ConnectionConfig(HTTPOptions):
    """Options every Cohere component has: ragloom's HTTP options with Cohere's endpoint and key variable."""

    api_key: Secret = attrs.field(factory=lambda: Secret(DEFAULT_API_KEY_ENV))
    base_url: str = attrs.field(default=DEFAULT_BASE_URL, validator=check_http_url)


class CohereAPI:
    """POSTs JSON to ``{base_url}/v2/<endpoint>`` with the bearer key, over an injected httpx.Client."""

    def __init__(self, config: ConnectionConfig, *, client: httpx.Client | None = None):
        self.config = config
        self._http = JSONClient(config, client=client, headers={"Accept": "application/json", "X-Client-Name": "ragloom"})
        self.base_url = self._http.base_url
        self.client = self._http.client

    def url(self, endpoint: str) -> str:
        """The full URL of a v2 endpoint."""
        return self._http.url(f"v2/{endpoint}")

    def post(self, endpoint: str, body: dict[str, Any], *, error: type[RagloomError]) -> Any:
        """The decoded JSON answer, or ``error`` carrying Cohere's message and the status code."""
        return self._http.post(f"v2/{endpoint}", body, error=error)

    def close(self) -> None:
        """Close the HTTP connection pool if this object opened it."""
        self._http.close()
