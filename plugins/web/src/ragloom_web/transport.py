"""An httpx transport whose every TCP connection goes through the address guard.

httpcore asks its network backend for a connection to ``(host, port)`` of the
request's origin. :class:`GuardedBackend` resolves that host once, checks every
address, and opens the socket to a checked address itself, so no other code
path resolves the name again. TLS is then started by httpcore with the
original host name as SNI and for certificate verification; the ``Host``
header is the original one too. Environment proxies are never used (a proxy
would make the connection on our behalf, past the guard).

The async path (``aingest``) gets the same guard and deadline through
:class:`AsyncGuardedBackend` (the resolver runs in a worker thread, so a slow
DNS answer never blocks the event loop).
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import anyio.to_thread
import httpcore
import httpx

from ragloom_web.addresses import AddressGuard

_deadline: ContextVar[float | None] = ContextVar("ragloom_web_deadline", default=None)


@contextlib.contextmanager
def exchange_deadline(deadline: float) -> Iterator[None]:
    """Every socket read and write in the block ends by ``deadline`` (``time.monotonic()``), however slowly bytes drip."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("total_timeout exceeded")
    return remaining if timeout is None else min(timeout, remaining)


class DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write is cut at the exchange deadline (status line and headers included)."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class AsyncDeadlineStream(httpcore.AsyncNetworkStream):
    """The async twin of :class:`DeadlineStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return AsyncDeadlineStream(await self._inner.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class GuardedBackend(httpcore.NetworkBackend):
    """A network backend that connects only to addresses the guard checked."""

    def __init__(self, guard: AddressGuard):
        self.guard = guard
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self.guard.resolve(host)  # one lookup; raises BlockedAddressError before any socket exists
        error: Exception | None = None
        for address in addresses:
            try:
                return DeadlineStream(self._inner.connect_tcp(
                    str(address), port, timeout=_bounded(timeout, httpcore.ConnectTimeout), local_address=local_address, socket_options=socket_options
                ))
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by the web loader")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """The async twin of :class:`GuardedBackend`: the same guard, one lookup, checked addresses only."""

    def __init__(self, guard: AddressGuard):
        self.guard = guard
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await anyio.to_thread.run_sync(self.guard.resolve, host)
        error: Exception | None = None
        for address in addresses:
            try:
                return AsyncDeadlineStream(await self._inner.connect_tcp(
                    str(address), port, timeout=_bounded(timeout, httpcore.ConnectTimeout), local_address=local_address, socket_options=socket_options
                ))
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by the web loader")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def make_ssl_context(*, verify: bool, ca_bundle: str | None) -> ssl.SSLContext:
    """Certificate checking against the host name (system-independent: certifi, or ``ca_bundle``)."""
    if not verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if ca_bundle:
        return ssl.create_default_context(cafile=ca_bundle)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _guarded(transport: Any, pool_class: type, backend: Any, ssl_context: ssl.SSLContext, max_connections: int) -> Any:
    """``transport`` with its connection pool replaced by one connecting through ``backend`` (the guard)."""
    if not isinstance(getattr(transport, "_pool", None), pool_class):  # pragma: no cover - an httpx release changed its internals
        raise RuntimeError(f"ragloom-web needs httpx 0.25–0.28 ({type(transport).__name__}._pool is not an httpcore.{pool_class.__name__})")
    transport._pool = pool_class(
        ssl_context=ssl_context,
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=5.0,
        network_backend=backend,
    )
    return transport


def make_client(guard: AddressGuard, ssl_context: ssl.SSLContext, *, max_connections: int = 10) -> httpx.Client:
    """An httpx client that never follows redirects by itself and connects only through the guard."""
    transport = httpx.HTTPTransport(verify=ssl_context, trust_env=False)
    _guarded(transport, httpcore.ConnectionPool, GuardedBackend(guard), ssl_context, max_connections)
    return httpx.Client(transport=transport, trust_env=False, follow_redirects=False)


def make_async_client(guard: AddressGuard, ssl_context: ssl.SSLContext, *, max_connections: int = 10) -> httpx.AsyncClient:
    """The async twin of :func:`make_client` (for the async path's event loop)."""
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
    _guarded(transport, httpcore.AsyncConnectionPool, AsyncGuardedBackend(guard), ssl_context, max_connections)
    return httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False)
