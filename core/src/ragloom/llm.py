"""A minimal OpenAI-compatible chat client for the LLM-backed parts (query expansion, LLM reranking).

``[llm]`` in a pipeline TOML::

    [llm]
    base_url = "http://localhost:11434/v1"   # OpenAI, Ollama, vLLM, LM Studio …
    model = "llama3.2"
    api_key = { env = "OPENAI_API_KEY" }      # optional; a reference, never the value

It POSTs ``{base_url}/chat/completions`` and returns the first choice's text,
retrying 429/5xx answers and timeouts with backoff that honours ``Retry-After``
(``agenerate`` and the async path of :mod:`ragloom.aio` use an ``httpx.AsyncClient``).
In Python any callable ``f(prompt) -> str`` or object with ``generate(prompt) -> str``
can stand in for it (:func:`as_generate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.aio import AsyncClients, bridge
from ragloom.config import Secret
from ragloom.errors import ConfigError, LLMError
from ragloom.httpclient import apost_json, check_http_url, post_json

if TYPE_CHECKING:  # imported when a client is built
    import httpx


@attrs.frozen(kw_only=True)
class LLMConfig:
    """``[llm]``: an OpenAI-compatible chat completions endpoint."""

    base_url: str = attrs.field(default="https://api.openai.com/v1", validator=check_http_url)
    model: str = attrs.field(default="gpt-4o-mini", validator=attrs.validators.min_len(1))
    api_key: Secret | None = None
    timeout: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    temperature: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    max_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    system: str | None = None


class LLMClient:
    """``generate(prompt) -> str`` over ``/chat/completions``; accepts an injected httpx.Client."""

    def __init__(self, config: LLMConfig, *, client: httpx.Client | None = None, async_client: httpx.AsyncClient | None = None):
        self.config = config
        self._api_key = config.api_key.get() if config.api_key is not None else None
        if client is None:
            import httpx

            client = httpx.Client()
        self._client = client
        self._async = AsyncClients(self._new_async_client, injected=async_client)
        self._url = config.base_url.rstrip("/") + "/chat/completions"

    @staticmethod
    def _new_async_client() -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient()

    def _request(self, prompt: str) -> tuple[dict[str, Any], dict[str, Any]]:
        c = self.config
        messages = [{"role": "system", "content": c.system}] if c.system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {"model": c.model, "messages": messages, "temperature": c.temperature}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        return body, {"headers": headers, "timeout": c.timeout, "retries": c.max_retries, "backoff": c.backoff, "error": LLMError}

    def generate(self, prompt: str) -> str:
        """The model's answer to ``prompt``; LLMError when the call or the answer is unusable."""
        bridged, text = bridge(lambda: self.agenerate(prompt))
        if bridged:
            return text  # type: ignore[return-value]
        body, options = self._request(prompt)
        return self._content(post_json(self._client, self._url, json=body, **options))

    async def agenerate(self, prompt: str) -> str:
        """:meth:`generate` over the async client."""
        body, options = self._request(prompt)
        return self._content(await apost_json(self._async.get(), self._url, json=body, **options))

    def _content(self, answer: Any) -> str:
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self._url}: the answer has no choices[0].message.content: {str(answer)[:200]}") from exc
        if not isinstance(content, str):
            raise LLMError(f"{self._url}: choices[0].message.content is not text: {content!r:.200}")
        return content

    __call__ = generate

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    async def aclose(self) -> None:
        """Close this event loop's async connection pool."""
        await self._async.aclose()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.config.base_url!r}, model={self.config.model!r})"


def build_llm(config: LLMConfig, *, client: httpx.Client | None = None) -> LLMClient:
    """The LLM client that ``[llm]`` describes."""
    return LLMClient(config, client=client)


def as_generate(llm: Any, *, what: str = "this component") -> Callable[[str], str]:
    """``llm`` as a ``prompt -> str`` function: an object with ``generate`` or a callable."""
    if llm is None:
        raise ConfigError(f"{what} needs an LLM: add an [llm] table to the config or pass .llm(client) to the builder")
    generate = getattr(llm, "generate", None)
    if callable(generate):
        return generate  # type: ignore[no-any-return]
    if callable(llm):
        return llm  # type: ignore[no-any-return]
    raise ConfigError(f"{what}: the LLM must be callable or have generate(prompt) -> str, got {type(llm).__name__}")
