"""The async path's HTTP: the openai embedder and the LLM go out through httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import threading

import httpx
import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.embedders.openai import OpenAIEmbedder, OpenAIEmbedderConfig
from ragloom.errors import LLMError
from ragloom.httpclient import apost_json
from ragloom.llm import LLMClient, LLMConfig

from .conftest import OpenAIServer, Reply


def _refusing_sync_client() -> httpx.Client:
    """A blocking client that fails every request: the async path must not use it (fault injection)."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"blocking client used for {request.url}")

    return httpx.Client(transport=httpx.MockTransport(refuse))


def test_apost_json_retries_like_post_json(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(status=429, body={"error": {"message": "slow"}}, headers={"Retry-After": "1"})]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def run() -> object:
        async with httpx.AsyncClient() as client:
            return await apost_json(client, openai_server.base_url + "/chat/completions", json={"model": "m", "messages": []}, sleep=sleep, error=LLMError)

    answer = asyncio.run(run())
    assert answer["choices"][0]["message"]["content"] == "ok"  # type: ignore[index]
    assert slept == [1.0] and len(openai_server.requests) == 2

    openai_server.script = [Reply(status=401, body={"error": {"message": "bad key"}})]

    async def fail() -> None:
        async with httpx.AsyncClient() as client:
            await apost_json(client, openai_server.base_url + "/embeddings", json={}, error=LLMError)

    with pytest.raises(LLMError, match="bad key") as info:
        asyncio.run(fail())
    assert info.value.status_code == 401


def test_aquery_and_aingest_embed_through_the_async_client(openai_server: OpenAIServer, corpus, tmp_path) -> None:
    embedder = OpenAIEmbedder(
        OpenAIEmbedderConfig(model="m", base_url=openai_server.base_url, dim=openai_server.dim, batch_size=8, max_concurrency=3),
        client=_refusing_sync_client(),
    )
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder(embedder).store("memory").build()

    async def run() -> tuple:
        done = await pipeline.aingest(corpus)
        found = await asyncio.gather(*(pipeline.aquery(q, top_k=3) for q in ["factory reset", "warranty", "battery"] * 4))
        direct = await embedder.aembed_documents(["a", "b", "c"])
        await pipeline.aclose()
        return done, found, direct

    done, found, direct = asyncio.run(run())
    assert done.documents == 12 and done.failed == ()
    assert all(len(rs) == 3 for rs in found)
    assert openai_server.peak_active <= 3
    # the same vectors as the blocking path: sync queries against a fresh embedder agree
    sync = OpenAIEmbedder(OpenAIEmbedderConfig(model="m", base_url=openai_server.base_url, dim=openai_server.dim))
    assert np.array_equal(direct, sync.embed_documents(["a", "b", "c"]))
    pipeline.embedder = sync
    pipeline.retriever.embedder = sync
    assert [r.chunk_id for r in pipeline.query("warranty", top_k=3)] == [r.chunk_id for r in found[1]]


def test_llm_generate_in_a_worker_uses_the_loops_async_client(openai_server: OpenAIServer) -> None:
    from ragloom.aio import run_blocking

    openai_server.chat = lambda messages: "answer to " + messages[-1]["content"]
    llm = LLMClient(LLMConfig(base_url=openai_server.base_url, model="m"), client=_refusing_sync_client())
    threads: list[str] = []

    def in_worker() -> str:
        threads.append(threading.current_thread().name)
        return llm.generate("q1")

    async def run() -> tuple[str, str]:
        bridged = await run_blocking(in_worker)
        direct = await llm.agenerate("q2")
        await llm.aclose()
        return bridged, direct

    assert asyncio.run(run()) == ("answer to q1", "answer to q2")
    assert threads and threads[0] != threading.main_thread().name
    with pytest.raises(AssertionError, match="blocking client"):  # off the async path the blocking client is used
        llm.generate("q3")
