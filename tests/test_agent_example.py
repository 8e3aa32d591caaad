"""examples/agent against a fake OpenAI-compatible endpoint on 127.0.0.1 that answers with a tool call."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


class FakeChat:
    """First turn: call rag_search (strict form: every field, nulls). Next turn: answer citing the first passage."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
                chat.requests.append({"path": self.path, "json": payload, "auth": self.headers.get("authorization")})
                tool_messages = [m for m in payload["messages"] if m["role"] == "tool"]
                if not tool_messages:
                    arguments = {"query": "factory reset", "top_k": 2, "threshold": None, "filter": None}
                    message = {
                        "role": "assistant", "content": None,
                        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "rag_search", "arguments": json.dumps(arguments)}}],
                    }
                else:
                    first = json.loads(tool_messages[-1]["content"])["results"][0]
                    message = {"role": "assistant", "content": f"Hold the reset button. [{first['citation']}]"}
                body = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def fake_chat() -> Iterator[FakeChat]:
    chat = FakeChat()
    thread = threading.Thread(target=chat.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield chat
    finally:
        chat.httpd.shutdown()
        chat.httpd.server_close()


def test_agent_loop_calls_rag_search_and_cites(fake_chat: FakeChat, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "quickstart", tmp_path / "quickstart", ignore=shutil.ignore_patterns(".ragloom"))
    config = tmp_path / "quickstart" / "ragloom.toml"
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent" / "agent.py"), "-c", str(config), "--ingest",
         "--base-url", fake_chat.base_url, "--model", "local-model", "How do I factory reset?"],
        capture_output=True, text=True, timeout=180, env={"PATH": "", "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    first, second = fake_chat.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    tool = first["json"]["tools"][0]
    assert tool["type"] == "function" and tool["function"]["name"] == "rag_search" and tool["function"]["strict"] is True
    tool_message = second["json"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    results = json.loads(tool_message["content"])["results"]
    assert len(results) == 2 and all(r["source"].startswith(str(tmp_path)) for r in results)
    assert second["json"]["messages"][-2]["tool_calls"][0]["id"] == "call_1"  # the assistant turn is kept
    assert out.stdout.strip() == f"Hold the reset button. [{results[0]['citation']}]"
