"""A real ``ragloom serve`` in a subprocess (uvicorn on 127.0.0.1), for HTTP tests and the bench."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

PIPELINE_TOML = """\
namespace = "served"

[chunker]
type = "recursive"
size = 400
overlap = 40

[embedder]
type = "hash"
dim = 256

[store]
type = "{store}"
{store_options}
"""


def write_config(folder: Path, *, store: str = "duckdb") -> Path:
    """A pipeline TOML (hash embedder; DuckDB file or memory store) in ``folder``."""
    options = 'path = "served.duckdb"' if store == "duckdb" else ""
    config = folder / "ragloom.toml"
    config.write_text(PIPELINE_TOML.format(store=store, store_options=options), encoding="utf-8")
    return config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(config: Path, *, args: Sequence[str] = (), env: dict[str, str] | None = None, timeout: float = 60) -> Iterator[str]:
    """Start ``ragloom serve -c config`` and yield its base URL once ``/health`` answers; stop it after."""
    port = free_port()
    command = [sys.executable, "-m", "ragloom.cli", "serve", "-c", str(config), "--port", str(port), "--log-level", "warning", *args]
    process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"ragloom serve exited with {process.returncode}:\n{process.stdout.read() if process.stdout else ''}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("ragloom serve did not start in time")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
