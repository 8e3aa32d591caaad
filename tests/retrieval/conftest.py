"""A real OpenAI-compatible HTTP server on 127.0.0.1 (embeddings and chat), with scripted faults."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import numpy as np
import pytest


@attrs.define
class Reply:
    """One scripted answer: status, headers, raw body, optional delay before answering."""

    status: int = 200
    body: bytes | str | dict[str, Any] | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    delay: float = 0.0


def text_vector(text: str, dim: int) -> list[float]:
    """A deterministic pseudo-embedding of a text."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(dim).round(6).tolist()


class OpenAIServer:
    """Speaks POST /v1/embeddings and POST /v1/chat/completions like OpenAI does."""

    def __init__(self) -> None:
        self.dim = 8
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.chat: Callable[[list[dict[str, Any]]], str] = lambda messages: "ok"
        self.delay = 0.0  # before each unscripted answer
        self.active = 0
        self.peak_active = 0  # most requests in flight at once
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = None
                with server._lock:
                    server.requests.append({"path": self.path, "json": payload, "headers": dict(self.headers)})
                    reply = server.script.pop(0) if server.script else None
                    server.active += 1
                    server.peak_active = max(server.peak_active, server.active)
                if reply is None:
                    reply = server.default_reply(self.path, payload)
                    time.sleep(server.delay)
                if reply.delay:
                    time.sleep(reply.delay)
                with server._lock:
                    server.active -= 1
                body = reply.body
                if isinstance(body, dict):
                    body = json.dumps(body)
                data = body.encode("utf-8") if isinstance(body, str) else (body or b"")
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.headers.get("content-type", "application/json"))
                    for key, value in reply.headers.items():
                        if key.lower() != "content-type":
                            self.send_header(key, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def default_reply(self, path: str, payload: Any) -> Reply:
        if path.endswith("/embeddings"):
            inputs = payload["input"]
            data = [{"object": "embedding", "index": i, "embedding": text_vector(t, self.dim)} for i, t in enumerate(inputs)]
            data.reverse()  # servers may answer out of order: clients must use "index"
            return Reply(body={"object": "list", "data": data, "model": payload["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        if path.endswith("/chat/completions"):
            content = self.chat(payload["messages"])
            return Reply(
                body={
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": payload["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                }
            )
        return Reply(status=404, body={"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
