"""A local HTTP server speaking Cohere's v2 rerank and embed wire format, checking what it receives.

It answers like Cohere: ``{"message": ...}`` errors with 400 for an invalid
request and 401 for a wrong key; rerank results ``[{index, relevance_score}]``
best first (scores from word overlap, see :func:`relevance`); embed answers
``{"embeddings": {"float": [...]}}`` with vectors from ragloom's hash embedder.
Tests queue faults (status, body, headers, delay) that are served first.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

API_KEY = "test-cohere-key"
_WORD = re.compile(r"\w+")
RERANK_KEYS = {"model", "query", "documents", "top_n", "max_tokens_per_doc", "rank_fields", "return_documents"}
EMBED_KEYS = {"model", "texts", "input_type", "embedding_types", "output_dimension", "truncate", "images", "inputs", "max_tokens"}
INPUT_TYPES = {"search_document", "search_query", "classification", "clustering", "image"}


def relevance(query: str, document: str) -> float:
    """The server's relevance score: word overlap, cosine-normalised, in [0, 1]."""
    q = set(_WORD.findall(query.lower()))
    d = set(_WORD.findall(document.lower()))
    if not q or not d:
        return 0.0
    return round(len(q & d) / math.sqrt(len(q) * len(d)), 6)


@attrs.define
class Fault:
    """One canned answer: status, body (dict -> JSON, str/bytes as is), headers, delay before answering."""

    status: int = 500
    body: Any = attrs.field(factory=lambda: {"message": "internal server error"})
    headers: dict[str, str] = attrs.field(factory=dict)
    delay: float = 0.0


@attrs.frozen
class Received:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float


class CohereServer:
    """Start with ``with CohereServer() as server:``; ``server.base_url`` is the base_url to configure."""

    def __init__(self, *, api_key: str = API_KEY, max_documents: int = 1000, dim: int = 64):
        self.api_key = api_key
        self.max_documents = max_documents
        self.dim = dim
        self.faults: deque[Fault] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> CohereServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def fail_next(self, *faults: Fault) -> None:
        """Serve these answers (in order) before answering normally again."""
        self.faults.extend(faults)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies received on ``path``."""
        return [r.body for r in self.received if r.path == path]

    # ------------------------------------------------------------------ answering

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[Fault, Any]:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        with self._lock:
            self.received.append(Received(path=path, headers=headers, body=body, at=time.monotonic()))
            fault = self.faults.popleft() if self.faults else None
        if fault is not None:
            return fault, body
        return self._cohere(path, headers, body), body

    def _cohere(self, path: str, headers: dict[str, str], body: Any) -> Fault:
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return Fault(401, {"id": "e1", "message": "invalid api token"})
        if not headers.get("content-type", "").startswith("application/json") or not isinstance(body, dict):
            return Fault(400, {"id": "e2", "message": "invalid request: body must be a JSON object"})
        if path == "/v2/rerank":
            return self._rerank(body)
        if path == "/v2/embed":
            return self._embed(body)
        return Fault(404, {"id": "e3", "message": f"no route {path}"})

    def _rerank(self, body: dict[str, Any]) -> Fault:
        unknown = set(body) - RERANK_KEYS
        documents = body.get("documents")
        top_n = body.get("top_n", len(documents) if isinstance(documents, list) else 0)
        problem = None
        if unknown:
            problem = f"unknown field(s) {sorted(unknown)}"
        elif not isinstance(body.get("model"), str) or not body["model"]:
            problem = "model is required"
        elif not isinstance(body.get("query"), str) or not body["query"]:
            problem = "query must be a non-empty string"
        elif not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
            problem = "documents must be a non-empty list of strings"
        elif len(documents) > self.max_documents:
            problem = f"too many documents: {len(documents)} > {self.max_documents}"
        elif not isinstance(top_n, int) or not 1 <= top_n <= len(documents):
            problem = f"top_n must be between 1 and the number of documents, got {top_n!r}"
        elif "max_tokens_per_doc" in body and (not isinstance(body["max_tokens_per_doc"], int) or body["max_tokens_per_doc"] < 1):
            problem = "max_tokens_per_doc must be a positive integer"
        if problem:
            return Fault(400, {"id": "e4", "message": f"invalid request: {problem}"})
        scored = sorted(((relevance(body["query"], d), i) for i, d in enumerate(documents)), key=lambda p: (-p[0], p[1]))
        results = [{"index": i, "relevance_score": s} for s, i in scored[:top_n]]
        return Fault(200, {"id": "r1", "results": results, "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}})

    def _embed(self, body: dict[str, Any]) -> Fault:
        unknown = set(body) - EMBED_KEYS
        texts = body.get("texts")
        problem = None
        if unknown:
            problem = f"unknown field(s) {sorted(unknown)}"
        elif not isinstance(body.get("model"), str) or not body["model"]:
            problem = "model is required"
        elif not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            problem = "texts must be a non-empty list of strings"
        elif len(texts) > 96:
            problem = f"too many texts: {len(texts)} > 96"
        elif body.get("input_type") not in INPUT_TYPES:
            problem = f"input_type must be one of {sorted(INPUT_TYPES)}"
        elif body.get("embedding_types") != ["float"]:
            problem = "this server only speaks embedding_types ['float']"
        if problem:
            return Fault(400, {"id": "e5", "message": f"invalid request: {problem}"})
        dim = body.get("output_dimension") or self.dim
        vectors = HashEmbedder(HashEmbedderConfig(dim=dim)).embed_documents(texts)
        return Fault(
            200,
            {
                "id": "m1",
                "embeddings": {"float": vectors.tolist()},
                "texts": texts,
                "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": sum(len(t.split()) for t in texts)}},
                "response_type": "embeddings_by_type",
            },
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default stderr log
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                fault, _ = server.answer(self.path, headers, raw)
                if fault.delay:
                    time.sleep(fault.delay)
                if isinstance(fault.body, (dict, list)):
                    payload = json.dumps(fault.body).encode()
                    content_type = "application/json"
                else:
                    payload = fault.body.encode() if isinstance(fault.body, str) else bytes(fault.body)
                    content_type = "application/json"
                try:
                    self.send_response(fault.status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in fault.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

        return Handler
