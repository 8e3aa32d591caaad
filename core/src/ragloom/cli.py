"""The ``ragloom`` command: ingest, query, remove, sources, stats, plugins (and eval).

Errors in config or input print one line (``ragloom: error: ...``) and exit
non-zero without a traceback; under ``--json`` the error is one JSON object on
stderr (``{"error": ..., "type": ..., "source": ...}``). Exit codes: 0 success,
1 error, 2 usage, 3 an ingest that skipped failed sources (``on_error =
"skip"``; 0 with ``--allow-failures``), 130 interrupted.

Path arguments resolve against the working directory (paths inside the TOML
against the TOML's folder). Without a ``[store]`` the CLI uses a DuckDB file
``.ragloom/ragloom.duckdb`` beside the config (ragloom-duckdb installed), or
refuses: a memory store would forget everything when the command exits.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ragloom.errors import RagloomError, StoreError

DEFAULT_CONFIG = "ragloom.toml"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILURES = 3
DEFAULT_STORE_PATH = ".ragloom/ragloom.duckdb"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", default=argparse.SUPPRESS, help=f"pipeline TOML file (default: {DEFAULT_CONFIG})")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    parser.add_argument("--namespace", default=argparse.SUPPRESS, help="namespace to use instead of the config's")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands share -c/--config and --json)."""
    parser = argparse.ArgumentParser(prog="ragloom", description="Declarative retrieval-augmented generation pipelines.")
    parser.add_argument("-c", "--config", default=DEFAULT_CONFIG, help=f"pipeline TOML file (default: {DEFAULT_CONFIG})")
    parser.add_argument("--json", action="store_true", default=False, help="print JSON")
    parser.add_argument("--namespace", default=None, help="namespace to use instead of the config's")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ingest = sub.add_parser("ingest", help="ingest sources (default: the [[sources]] of the config)")
    _common(ingest)
    ingest.add_argument("sources", nargs="*", metavar="PATH_OR_URL")
    ingest.add_argument("--loader", help="force this loader for the given sources")
    ingest.add_argument("--tag", action="append", default=[], dest="tags", help="tag every document (repeatable)")
    ingest.add_argument("--progress", choices=("auto", "always", "never"), default="auto", help="progress bar (default: on a terminal)")
    ingest.add_argument("--executor", help='run the ingest on this executor (default: [ingest] executor, "local" = in this process; e.g. "ray")')
    ingest.add_argument("--address", help="cluster address for the executor (sets [ingest.<executor>] address, e.g. auto or ray://host:10001)")
    ingest.add_argument("--chunker", help="chunk with this chunker for this run (default: the config's [chunker])")
    ingest.add_argument("--chunk-size", type=int, help="chunk size for this run (the chunker's 'size' option)")
    ingest.add_argument("--chunk-overlap", type=int, help="chunk overlap for this run (the chunker's 'overlap' option)")
    ingest.add_argument("--allow-failures", action="store_true", help=f"exit 0 even when sources failed (default: exit {EXIT_FAILURES})")

    query = sub.add_parser("query", help="answer a query with ranked chunks and their sources")
    _common(query)
    query.add_argument("text")
    query.add_argument("-k", "--top-k", type=int, help="number of results")
    query.add_argument("--threshold", type=float, help="minimum score")
    query.add_argument("--filter", help='metadata filter as JSON, e.g. \'{"category": "support"}\'')
    query.add_argument("-n", "--top-n", type=int, help="results kept after reranking (older spelling of --top-k with a reranker)")
    query.add_argument("--candidates", type=int, help="pool retrieved before reranking (default: 4 x --top-k)")
    query.add_argument("--lambda", type=float, dest="lambda_mult", help="MMR relevance/diversity trade-off for this query (0..1)")
    query.add_argument("--weights", help='hybrid weights for this query as JSON, e.g. \'{"bm25": 0.3, "vector": 0.7}\'')
    query.add_argument(
        "--option", action="append", default=[], dest="options", metavar="KEY=VALUE",
        help="any option of the configured retriever for this query (VALUE as JSON when it parses; repeatable)",
    )

    remove = sub.add_parser("remove", help="remove sources (a directory: every source under it) and their chunks")
    _common(remove)
    remove.add_argument("sources", nargs="+", metavar="PATH_OR_URL")

    sources = sub.add_parser("sources", help="list the stored sources with their chunk counts")
    _common(sources)

    stats = sub.add_parser("stats", help="what the store holds for this pipeline")
    _common(stats)

    plugins = sub.add_parser("plugins", help="list every component with its providing distribution")
    _common(plugins)

    try:
        from ragloom.evaluation import add_eval_command
    except ImportError:  # pragma: no cover - evaluation is part of core
        pass
    else:
        add_eval_command(sub)
    from ragloom.serve.command import add_server_commands

    add_server_commands(sub)
    return parser


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _display_path(source: str) -> str:
    """A stored source as the user can paste it back (``remove``): relative when it is a path, shell-quoted."""
    text = source
    if os.path.isabs(source):
        try:
            text = os.path.relpath(source)
        except ValueError:  # different drive on Windows
            text = source
    return shlex.quote(text)


def _cli_source(source: str) -> str:
    """A source given on the command line: URLs as they are, paths against the working directory."""
    from ragloom.loaders.base import is_url

    if is_url(source) or source.startswith("file://"):
        return source
    return os.path.abspath(os.path.expanduser(source))


def _load_pipeline(args: argparse.Namespace) -> Any:
    from ragloom.config import PipelineConfig, parse_component, tomllib
    from ragloom.pipeline import Pipeline
    from ragloom.plugins import Registry

    registry = Registry()
    config = PipelineConfig.from_toml(args.config, registry=registry)
    if args.namespace is not None:
        if not args.namespace:
            raise RagloomError("--namespace must not be empty")
        config = attrs.evolve(config, namespace=args.namespace)
    if "store" not in tomllib.loads(Path(args.config).read_text(encoding="utf-8")):
        if "duckdb" not in registry.names("store"):
            raise RagloomError(
                f"{args.config} has no [store], and the CLI needs a persistent one (each command is a new process): "
                'install ragloom-duckdb (pip install -e plugins/duckdb) or declare [store] with a type, e.g. type = "duckdb"'
            )
        store = parse_component("store", {"type": "duckdb", "path": DEFAULT_STORE_PATH}, registry, path="$.store")
        config = attrs.evolve(config, store=store)
    if getattr(args, "executor", None) or getattr(args, "address", None):
        config = _with_executor(config, args.executor or config.ingest.executor, args.address, registry)
    return Pipeline.from_config(config, registry=registry)


def _with_executor(config: Any, name: str, address: str | None, registry: Any) -> Any:
    """``--executor`` / ``--address`` over the config's ``[ingest]``: the TOML's ``[ingest.<name>]`` options are kept."""
    from ragloom.config import executor_spec

    if name == "local" and address:
        raise RagloomError("--address needs a distributed executor (--executor ray, or [ingest] executor in the config)")
    spec = config.executors.get(name) or executor_spec(name, {}, registry)
    if address and spec is not None:
        if not attrs.has(type(spec.config)) or "address" not in attrs.fields_dict(type(spec.config)):
            raise RagloomError(f"the {name!r} executor takes no address")
        spec = attrs.evolve(spec, config=attrs.evolve(spec.config, address=address))
    return attrs.evolve(config, ingest=attrs.evolve(config.ingest, executor=name), executor=spec)


def _chunker_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The per-run chunker from ``--chunker``, ``--chunk-size`` and ``--chunk-overlap`` (None: the config's)."""
    options: dict[str, Any] = {}
    if args.chunker is not None:
        options["type"] = args.chunker
    if args.chunk_size is not None:
        options["size"] = args.chunk_size
    if args.chunk_overlap is not None:
        options["overlap"] = args.chunk_overlap
    return options or None


def cmd_ingest(args: argparse.Namespace) -> int:
    """``ragloom ingest [PATH_OR_URL ...]``."""
    from ragloom.cliprogress import progress_display, progress_wanted

    pipeline = _load_pipeline(args)
    with pipeline:
        source = [_cli_source(s) for s in args.sources] or None
        if pipeline.config.store.type == "memory" and not args.json:
            print("ragloom: warning: the memory store forgets everything when this command exits", file=sys.stderr)
        chunker = _chunker_options(args)
        if progress_wanted(args.progress, json_output=args.json):
            with progress_display(_display_path) as on_progress:
                result = pipeline.ingest(source, loader=args.loader, tags=args.tags, progress=on_progress, chunker=chunker)
        else:
            result = pipeline.ingest(source, loader=args.loader, tags=args.tags, chunker=chunker)
    status = EXIT_FAILURES if result.failed and not args.allow_failures else 0
    if args.json:
        _print_json(result.to_dict())
        return status
    print(
        f"ingested {result.documents} documents from {result.sources} sources: "
        f"{result.chunks} chunks written, {result.unchanged} documents unchanged, "
        + (f"{result.updated} documents with new metadata or tags (nothing embedded), " if result.updated else "")
        + f"{result.removed} chunks removed"
    )
    for removed in result.removed_sources:
        print(f"removed source (no longer present): {_display_path(removed)}")
    for skipped in result.skipped:
        print(f"skipped (no loader for this file type): {_display_path(skipped)}")
    for failure in result.failed:
        print(f"failed: {_display_path(failure.source)}: {failure.reason}")
    if status:
        print(f"ragloom: {len(result.failed)} sources failed (exit {EXIT_FAILURES}; --allow-failures to exit 0)", file=sys.stderr)
    return status


def _json_value(text: str) -> Any:
    """``text`` decoded as JSON when it parses, else the text itself."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _retriever_options(args: argparse.Namespace) -> dict[str, Any]:
    """Per-query retriever options from ``--lambda``, ``--weights`` and ``--option KEY=VALUE``."""
    options: dict[str, Any] = {}
    for item in args.options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RagloomError(f"--option {item!r}: expected KEY=VALUE, e.g. --option fetch_k=20")
        options[key.strip()] = _json_value(value)
    if args.lambda_mult is not None:
        options["lambda_mult"] = args.lambda_mult
    if args.weights is not None:
        weights = _json_value(args.weights)
        if not isinstance(weights, dict):
            raise RagloomError(f"--weights must be a JSON object such as '{{\"bm25\": 0.3, \"vector\": 0.7}}', got {args.weights!r}")
        options["weights"] = weights
    return options


def cmd_query(args: argparse.Namespace) -> int:
    """``ragloom query TEXT``."""
    from ragloom.pipeline import iter_results_as_dicts

    filter_spec = None
    if args.filter:
        try:
            filter_spec = json.loads(args.filter)
        except json.JSONDecodeError as exc:
            raise RagloomError(f"--filter is not valid JSON: {exc.msg} at column {exc.colno}") from None
        except RecursionError:
            raise RagloomError("--filter is nested too deeply") from None
        except ValueError as exc:  # e.g. an integer over 4,300 digits
            raise RagloomError(f"--filter is not valid JSON: {exc}") from None
    pipeline = _load_pipeline(args)
    with pipeline:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # explain_empty says the same in one line
            results = pipeline.query(
                args.text, top_k=args.top_k, threshold=args.threshold, filter=filter_spec, top_n=args.top_n,
                candidates=args.candidates, options=_retriever_options(args),
            )
            hint = pipeline.explain_empty(args.text, threshold=args.threshold, filter=filter_spec) if not results else None
    if args.json:
        _print_json({"query": args.text, "results": list(iter_results_as_dicts(results)), **({"hint": hint} if hint else {})})
        return 0
    if not results:
        print(f"no results: {hint}")
        return 0
    for rank, result in enumerate(results, start=1):
        title = result.metadata.get("title")
        header = f"{rank}. [{result.score:.3f}] {_display_path(result.source)} [{result.span[0]}:{result.span[1]}]"
        if result.locator:
            header += f" ({result.locator})"
        print(header + (f" — {title}" if title else ""))
        snippet = " ".join(result.text.split())
        print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """``ragloom remove PATH_OR_URL ...``: a directory removes every source under it."""
    pipeline = _load_pipeline(args)
    removed: dict[str, int] = {}
    not_stored: list[str] = []
    with pipeline:
        for given in args.sources:
            # a path against the working directory; else a source stored as typed (an id such as ticket:42)
            matched = pipeline.match_sources(_cli_source(given)) or ([given] if given in pipeline.sources() else [])
            if not matched:
                not_stored.append(given)
            removed.update(pipeline.remove_sources(matched))
    status = EXIT_ERROR if not_stored else 0
    if args.json:
        _print_json({"removed": removed, "not_stored": not_stored})
    else:
        for source, count in removed.items():
            print(f"removed {count} chunks of {_display_path(source)}")
    for given in not_stored:  # exit 1: each one an error on stderr, one JSON object per line under --json
        message = f"nothing stored for {given} in namespace {pipeline.namespace!r} (see `ragloom sources`)"
        _print_error(StoreError(message), as_json=args.json, source=given)
    return status


def cmd_sources(args: argparse.Namespace) -> int:
    """``ragloom sources``: stored sources with their chunk counts."""
    pipeline = _load_pipeline(args)
    with pipeline:
        counts = pipeline.source_counts()
    if args.json:
        _print_json([{"source": source, "chunks": chunks} for source, chunks in counts.items()])
        return 0
    for source, chunks in counts.items():
        print(f"{chunks if chunks is not None else '?':>7}  {_display_path(source)}")
    print(f"{len(counts)} sources in namespace {pipeline.namespace!r}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """``ragloom stats``."""
    pipeline = _load_pipeline(args)
    with pipeline:
        stats = pipeline.stats()
    if args.json:
        _print_json(stats)
    else:
        print(f"namespace:  {stats['namespace']}")
        print(f"sources:    {stats['sources']}")
        print(f"documents:  {stats['documents']}")
        print(f"chunks:     {stats['chunks']}")
        print(f"embedder:   {stats['embedder']}")
        for key, value in stats["store"].items():
            if key not in ("chunks", "sources", "documents"):
                print(f"store.{key}: {value}")
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    """``ragloom plugins``: every component, its stage, distribution and version."""
    from ragloom.plugins import Registry

    rows = [
        {
            "stage": info.stage,
            "name": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "plugin": info.plugin,
            "description": info.description,
        }
        for info in Registry().all()
    ]
    if args.json:
        _print_json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        print(f"{row['stage']:<9} {row['name']:<{width}}  {row['distribution']} {row['version']}  {row['description']}")
    return 0


COMMANDS = {
    "ingest": cmd_ingest,
    "query": cmd_query,
    "remove": cmd_remove,
    "sources": cmd_sources,
    "stats": cmd_stats,
    "plugins": cmd_plugins,
}


def _print_error(exc: RagloomError, *, as_json: bool, source: str | None = None) -> None:
    message = " ".join(str(exc).split("\n"))
    if as_json:
        error = {"error": message, "type": type(exc).__name__, "source": source if source is not None else getattr(exc, "source", None)}
        print(json.dumps(error, ensure_ascii=False), file=sys.stderr)
    else:
        print(f"ragloom: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragloom`` command."""
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 prints escaped, not as a crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from importlib.metadata import version

        print(f"ragloom {version('ragloom')}")
        return 0
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
    try:
        if args.command != "plugins" and args.command in COMMANDS and not Path(args.config).exists():
            raise RagloomError(f"config file not found: {args.config} (pass -c/--config PATH)")
        if handler is None:  # pragma: no cover - argparse requires a command
            parser.print_help()
            return EXIT_USAGE
        return int(handler(args) or 0)
    except RagloomError as exc:
        _print_error(exc, as_json=args.json)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ragloom: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head`
        return 0
    except OSError as exc:  # the machine refused (disk full, permissions): one line, not a traceback
        print(f"ragloom: error: {exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
