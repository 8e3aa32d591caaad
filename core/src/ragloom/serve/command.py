"""``ragloom serve`` and ``ragloom mcp``: the command-line entries of the HTTP and MCP servers."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ragloom.errors import RagloomError

DEFAULT_TOKEN_ENV = "RAGLOOM_SERVE_TOKEN"


def _shared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", default=argparse.SUPPRESS, help="pipeline TOML file (default: ragloom.toml)")
    parser.add_argument(
        "--allow-root", action="append", default=[], dest="allowed_roots", metavar="DIR",
        help="folder that ingest may read (repeatable); without one, ingest is disabled",
    )
    parser.add_argument("--allow-urls", action="store_true", help="let ingest fetch http(s) URLs (the web loader's SSRF rules apply)")


def add_server_commands(subparsers: Any) -> None:
    """Add ``serve`` and ``mcp`` to the ``ragloom`` command."""
    serve = subparsers.add_parser("serve", help="serve the pipeline over HTTP (needs ragloom[serve])")
    _shared(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--token-env", default=DEFAULT_TOKEN_ENV, metavar="VAR",
        help=f"environment variable holding the bearer token; if it is set, requests need it (default: {DEFAULT_TOKEN_ENV})",
    )
    serve.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    serve.add_argument(
        "--blas-threads", type=int, default=1, metavar="N",
        help="threads numpy's BLAS may use per call (default 1: requests already run side by side; 0 keeps numpy's default)",
    )
    serve.set_defaults(handler=cmd_serve)
    mcp = subparsers.add_parser("mcp", help="serve rag_search and rag_ingest to an MCP client over stdio (needs ragloom[mcp])")
    _shared(mcp)
    mcp.set_defaults(handler=cmd_mcp)


def _pipeline(args: argparse.Namespace) -> Any:
    if not Path(args.config).exists():
        raise RagloomError(f"config file not found: {args.config} (pass -c/--config PATH)")
    from ragloom.pipeline import Pipeline

    return Pipeline.from_toml(args.config)


def _roots(args: argparse.Namespace) -> list[str]:
    for root in args.allowed_roots:
        if not Path(root).is_dir():
            raise RagloomError(f"--allow-root {root}: not a folder")
    return list(args.allowed_roots)


def cmd_serve(args: argparse.Namespace) -> int:
    """``ragloom serve``: uvicorn, one process, owning the pipeline's store."""
    try:
        import uvicorn

        from ragloom.serve.app import create_app
    except ImportError as exc:
        raise RagloomError(f"ragloom serve needs the serve extra: pip install 'ragloom[serve]' ({exc.name} is missing)") from None
    roots = _roots(args)
    token = os.environ.get(args.token_env) or None
    limit_blas_threads(args.blas_threads)
    pipeline = _pipeline(args)
    app = create_app(pipeline, allowed_roots=roots, allow_urls=args.allow_urls, token=token)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, workers=1)
    return 0


def limit_blas_threads(threads: int) -> None:
    """Cap numpy's BLAS threads (``threads`` 0: leave them).

    A server answers many small searches at once from its worker threads; a
    multi-threaded BLAS then only adds threads that spin for a CPU (on a busy
    2-core machine a 2,600-chunk memory-store query went from 29 ms to 0.5 ms
    at p50 with one BLAS thread, see docs/benchmarks.md).
    """
    if threads < 0:
        raise RagloomError("--blas-threads must be 0 or more")
    if threads == 0:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))  # honoured if numpy is not loaded yet
        return
    threadpool_limits(threads, user_api="blas")


def cmd_mcp(args: argparse.Namespace) -> int:
    """``ragloom mcp``: an MCP server over stdio."""
    try:
        from ragloom.mcp_server import run_stdio
    except ImportError as exc:
        raise RagloomError(f"ragloom mcp needs the mcp extra: pip install 'ragloom[mcp]' ({exc.name} is missing)") from None
    roots = _roots(args)
    pipeline = _pipeline(args)
    run_stdio(pipeline, allowed_roots=roots, allow_urls=args.allow_urls)
    return 0
