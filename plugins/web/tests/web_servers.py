"""Helpers of the web loader tests: real HTTP servers on the loopback interface that record every request."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

from ragloom_web import WebLoader, WebLoaderConfig


@attrs.define
class Seen:
    """One request a server received."""

    path: str
    headers: dict[str, str]
    at: float = 0.0


@attrs.frozen
class Reply:
    """A canned response."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)


Handler = Callable[[BaseHTTPRequestHandler], None]


class LocalServer:
    """A threaded http.server on ``host``; ``route(path, ...)`` sets what a path answers (404 otherwise)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, ssl_context: Any = None):
        self.routes: dict[str, Reply | Handler] = {}
        self.requests: list[Seen] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with server.lock:
                    server.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, time.monotonic()))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    route = server.routes.get(self.path)
                    if route is None:
                        route = Reply(b"not found", 404, {"Content-Type": "text/plain"})
                    if isinstance(route, Reply):
                        self.send_response(route.status)
                        for name, value in route.headers.items():
                            self.send_header(name, value)
                        if "Content-Length" not in route.headers:
                            self.send_header("Content-Length", str(len(route.body)))
                        self.end_headers()
                        self.wfile.write(route.body)
                    else:
                        route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        if ssl_context is not None:
            self.httpd.socket = ssl_context.wrap_socket(self.httpd.socket, server_side=True)
        self.host = host
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def url(self, path: str = "/", *, host: str | None = None, scheme: str = "http") -> str:
        return f"{scheme}://{host or self.host}:{self.port}{path}"

    def route(self, path: str, body: bytes | str | Handler = b"", *, status: int = 200, content_type: str | None = "text/html; charset=utf-8", headers: dict[str, str] | None = None) -> None:
        if callable(body):
            self.routes[path] = body
            return
        data = body.encode("utf-8") if isinstance(body, str) else body
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers.setdefault("Content-Type", content_type)
        self.routes[path] = Reply(data, status, all_headers)

    def paths(self) -> list[str]:
        with self.lock:
            return [seen.path for seen in self.requests]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def make_loader(resolver: Any = None, **options: Any) -> WebLoader:
    """A web loader with fast test defaults (no politeness delay, no retry waits)."""
    defaults: dict[str, Any] = {"politeness_delay": 0.0, "backoff": 0.0, "connect_timeout": 5.0, "read_timeout": 5.0, "total_timeout": 20.0}
    defaults.update(options)
    return WebLoader(WebLoaderConfig(**defaults), resolver=resolver)


def load_all(loader: WebLoader, url: str) -> list[Any]:
    return list(loader.load(url))


def slow(seconds: float, body: bytes = b"late") -> Handler:
    """A handler that waits before answering."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    return handler


def make_tls_files(directory: Any, hostname: str) -> tuple[str, str, str]:
    """``(ca_file, cert_file, key_file)``: a test CA and a server certificate for ``hostname`` signed by it."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ragloom-web test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = (str(directory / name) for name in ("ca.pem", "cert.pem", "key.pem"))
    with open(ca_file, "wb") as handle:
        handle.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(cert_file, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_file, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca_file, cert_file, key_file


class CountingResolver:
    """A resolver answering from a table (each lookup may answer differently); counts lookups."""

    def __init__(self, answers: dict[str, list[list[str]]]):
        self.answers = {host: list(seq) for host, seq in answers.items()}
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        sequence = self.answers[host]
        return sequence.pop(0) if len(sequence) > 1 else sequence[0]
