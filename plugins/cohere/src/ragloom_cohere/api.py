"""What the Cohere reranker and embedder share: connection options and the authenticated POST.

Calls go through :func:`ragloom.httpclient.post_json`, which retries 429 and
5xx answers, timeouts and connection errors with exponential backoff, honours
``Retry-After``, and raises the caller's error class with Cohere's own message
(``{"message": ...}``) and the status code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ragloom.aio import AsyncClients, bridge
from ragloom.config import Secret
from ragloom.errors import RagloomError
from ragloom.httpclient import apost_json, check_http_url, post_json

if TYPE_CHECKING:  # httpx is imported when a component is built: plugin discovery stays light
    import httpx

DEFAULT_BASE_URL = "https://api.cohere.com"
DEFAULT_API_KEY_ENV = "COHERE_API_KEY"


@attrs.frozen(kw_only=True)
class ConnectionConfig:
    """Options every Cohere component has: the key, the endpoint, timeouts and retries."""

    api_key: Secret = attrs.field(factory=lambda: Secret(DEFAULT_API_KEY_ENV))
    base_url: str = attrs.field(default=DEFAULT_BASE_URL, validator=check_http_url)
    timeout: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))


class CohereAPI:
    """POSTs JSON to ``{base_url}/v2/<endpoint>`` with the bearer key, over an injected httpx.Client."""

    def __init__(self, config: ConnectionConfig, *, client: httpx.Client | None = None, async_client: httpx.AsyncClient | None = None):
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {config.api_key.get()}",
            "Accept": "application/json",
            "X-Client-Name": "ragloom",
        }
        self._owns_client = client is None
        if client is None:
            import httpx

            client = httpx.Client()
        self.client = client
        self._async = AsyncClients(_new_async_client, injected=async_client)

    def url(self, endpoint: str) -> str:
        """The full URL of a v2 endpoint."""
        return f"{self.base_url}/v2/{endpoint}"

    def post(self, endpoint: str, body: dict[str, Any], *, error: type[RagloomError]) -> Any:
        """The decoded JSON answer, or ``error`` carrying Cohere's message and the status code."""
        bridged, answer = bridge(lambda: self.apost(endpoint, body, error=error))
        if bridged:
            return answer
        c = self.config
        return post_json(
            self.client,
            self.url(endpoint),
            json=body,
            headers=self._headers,
            timeout=c.timeout,
            retries=c.max_retries,
            backoff=c.backoff,
            error=error,
        )

    async def apost(self, endpoint: str, body: dict[str, Any], *, error: type[RagloomError]) -> Any:
        """:meth:`post` over the async client (the async path of :mod:`ragloom.aio`)."""
        c = self.config
        return await apost_json(
            self._async.get(),
            self.url(endpoint),
            json=body,
            headers=self._headers,
            timeout=c.timeout,
            retries=c.max_retries,
            backoff=c.backoff,
            error=error,
        )

    async def aclose(self) -> None:
        """Close this event loop's async connection pool."""
        await self._async.aclose()

    def close(self) -> None:
        """Close the HTTP connection pool if this object opened it."""
        if self._owns_client:
            self.client.close()


def _new_async_client() -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient()
