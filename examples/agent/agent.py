"""A tool-calling agent over a ragloom pipeline, against any OpenAI-compatible chat endpoint.

    python examples/agent/agent.py -c examples/quickstart/ragloom.toml "How do I factory reset?"

Endpoint and model from ``--base-url`` / ``--model`` (or ``OPENAI_BASE_URL`` /
``OPENAI_MODEL``), the key from ``OPENAI_API_KEY`` if set: OpenAI, Ollama
(``http://localhost:11434/v1``), vLLM, LM Studio … The model gets ``rag_search``
in OpenAI's strict tool shape; each tool call runs against the pipeline and
its answer goes back as a ``tool`` message, until the model answers in text.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import httpx

from ragloom import Pipeline
from ragloom.tools import rag_search_tool
from ragloom.tools_export import call_tool, to_openai

SYSTEM = (
    "Answer from the knowledge base only. Call rag_search first; cite every fact as "
    "source[start:end] using the citation field of the passages you used."
)


def run_agent(pipeline: Pipeline, question: str, *, base_url: str, model: str, api_key: str | None = None, max_turns: int = 5) -> str:
    """The model's final answer after it has called the tools as often as it wanted (at most ``max_turns``)."""
    tools = [rag_search_tool(pipeline)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=120) as http:
        for _ in range(max_turns):
            response = http.post("/chat/completions", json={"model": model, "messages": messages, "tools": [to_openai(t) for t in tools]})
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return str(message.get("content") or "")
            for call in calls:
                answer = call_tool(tools, call["function"]["name"], call["function"]["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": answer})
    return "(no answer: the model kept calling tools)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("question")
    parser.add_argument("-c", "--config", default="ragloom.toml", help="pipeline TOML (already ingested)")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--ingest", action="store_true", help="ingest the config's [[sources]] first")
    args = parser.parse_args(argv)
    with Pipeline.from_toml(args.config) as pipeline:
        if args.ingest:
            pipeline.ingest()
        print(run_agent(pipeline, args.question, base_url=args.base_url, model=args.model, api_key=os.environ.get("OPENAI_API_KEY")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
