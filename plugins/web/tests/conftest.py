"""Fixtures of the web loader tests: a real HTTP server on 127.0.0.1 per test.

A safety net refuses (and records) every TCP connection to an address outside
the loopback interface, so no test can send traffic elsewhere even when the
code under test is broken; tests assert on what it recorded.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helpers module beside this file, whatever pytest's import mode

from web_servers import LocalServer  # noqa: E402


@pytest.fixture(autouse=True)
def off_loopback_connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Connections the code tried to open to non-loopback addresses (refused by the fault injector)."""
    attempts: list[tuple[str, int]] = []
    original = httpcore.SyncBackend.connect_tcp

    def guarded(self: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            attempts.append((host, port))
            raise httpcore.ConnectError(f"test safety net: no connections to {host}")
        return original(self, host, port, *args, **kwargs)

    async def aguarded(self: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            attempts.append((host, port))
            raise httpcore.ConnectError(f"test safety net: no connections to {host}")
        return await original_async(self, host, port, *args, **kwargs)

    original_async = httpcore.AnyIOBackend.connect_tcp
    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", guarded)
    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", aguarded)  # the async path (aingest)
    return attempts


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    local.route("/robots.txt", "", status=404, content_type="text/plain")
    yield local
    local.close()
