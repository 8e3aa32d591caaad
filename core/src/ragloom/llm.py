"""A minimal OpenAI-compatible chat client for the LLM-backed parts (query expansion, LLM reranking).

``[llm]`` in a pipeline TOML::

    [llm]
    base_url = "http://localhost:11434/v1"   # OpenAI, Ollama, vLLM, LM Studio …
    model = "llama3.2"
    api_key = { env = "OPENAI_API_KEY" }      # optional; a reference, never the value

It is the ``openai`` component of the ``llm`` stage (a plugin may register
others through ``register_llms``; ``type = "..."`` picks one). It POSTs
``{base_url}/chat/completions`` and returns the first choice's text,
retrying 429/5xx answers and timeouts with backoff that honours ``Retry-After``.
In Python any callable ``f(prompt) -> str`` or object with ``generate(prompt) -> str``
can stand in for it (:func:`as_generate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.errors import ConfigError, LLMError
from ragloom.hookspecs import hookimpl
from ragloom.httpclient import HTTPOptions, JSONClient

if TYPE_CHECKING:  # imported when a client is built
    import httpx

    from ragloom.plugins import BuildContext
    from ragloom.protocols import LLMLike


@attrs.frozen(kw_only=True)
class LLMConfig(HTTPOptions):
    """``[llm]``: an OpenAI-compatible chat completions endpoint."""

    model: str = attrs.field(default="gpt-4o-mini", validator=attrs.validators.min_len(1))
    temperature: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    max_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    system: str | None = None


class LLMClient:
    """``generate(prompt) -> str`` over ``/chat/completions``; accepts an injected httpx.Client."""

    def __init__(self, config: LLMConfig, *, client: httpx.Client | None = None):
        self.config = config
        self._http = JSONClient(config, client=client)
        self._url = self._http.url("chat/completions")

    def generate(self, prompt: str) -> str:
        """The model's answer to ``prompt``; LLMError when the call or the answer is unusable."""
        c = self.config
        messages = [{"role": "system", "content": c.system}] if c.system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {"model": c.model, "messages": messages, "temperature": c.temperature}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        answer = self._http.post("chat/completions", body, error=LLMError)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self._url}: the answer has no choices[0].message.content: {str(answer)[:200]}") from exc
        if not isinstance(content, str):
            raise LLMError(f"{self._url}: choices[0].message.content is not text: {content!r:.200}")
        return content

    __call__ = generate

    def close(self) -> None:
        """Close the HTTP connection pool if this client opened it."""
        self._http.close()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.config.base_url!r}, model={self.config.model!r})"


def build_llm(config: LLMConfig, *, client: httpx.Client | None = None) -> LLMClient:
    """The LLM client that ``[llm]`` describes."""
    return LLMClient(config, client=client)


def _openai(config: LLMConfig, context: BuildContext) -> LLMClient:
    """OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, LM Studio …)."""
    return LLMClient(config)


@hookimpl
def register_llms(register):  # type: ignore[no-untyped-def]
    register("openai", _openai, config=LLMConfig)


def as_generate(llm: LLMLike | None, *, what: str = "this component") -> Callable[[str], str]:
    """``llm`` as a ``prompt -> str`` function: an object with ``generate`` or a callable."""
    if llm is None:
        raise ConfigError(f"{what} needs an LLM: add an [llm] table to the config or pass .llm(client) to the builder")
    generate = getattr(llm, "generate", None)
    if callable(generate):
        return generate  # type: ignore[no-any-return]
    if callable(llm):
        return llm  # type: ignore[no-any-return]
    raise ConfigError(f"{what}: the LLM must be callable or have generate(prompt) -> str, got {type(llm).__name__}")
