"""The ``ragloom`` command: ingest, query, remove, stats, plugins (and eval).

Errors in config or input print one line (``ragloom: error: ...``) and exit
non-zero without a traceback. ``--json`` prints machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragloom.errors import RagloomError

DEFAULT_CONFIG = "ragloom.toml"
EXIT_ERROR = 1
EXIT_USAGE = 2


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", default=argparse.SUPPRESS, help=f"pipeline TOML file (default: {DEFAULT_CONFIG})")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands share -c/--config and --json)."""
    parser = argparse.ArgumentParser(prog="ragloom", description="Declarative retrieval-augmented generation pipelines.")
    parser.add_argument("-c", "--config", default=DEFAULT_CONFIG, help=f"pipeline TOML file (default: {DEFAULT_CONFIG})")
    parser.add_argument("--json", action="store_true", default=False, help="print JSON")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ingest = sub.add_parser("ingest", help="ingest sources (default: the [[sources]] of the config)")
    _common(ingest)
    ingest.add_argument("sources", nargs="*", metavar="PATH_OR_URL")
    ingest.add_argument("--loader", help="force this loader for the given sources")
    ingest.add_argument("--tag", action="append", default=[], dest="tags", help="tag every document (repeatable)")
    ingest.add_argument("--progress", choices=("auto", "always", "never"), default="auto", help="progress bar (default: on a terminal)")

    query = sub.add_parser("query", help="answer a query with ranked chunks and their sources")
    _common(query)
    query.add_argument("text")
    query.add_argument("-k", "--top-k", type=int, help="number of results")
    query.add_argument("--threshold", type=float, help="minimum score")
    query.add_argument("--filter", help='metadata filter as JSON, e.g. \'{"category": "support"}\'')
    query.add_argument("-n", "--top-n", type=int, help="results kept after reranking")

    remove = sub.add_parser("remove", help="remove a source and its chunks")
    _common(remove)
    remove.add_argument("sources", nargs="+", metavar="PATH_OR_URL")

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
    try:
        return os.path.relpath(source) if os.path.isabs(source) else source
    except ValueError:  # different drive on Windows
        return source


def _load_pipeline(args: argparse.Namespace) -> Any:
    from ragloom.pipeline import Pipeline

    return Pipeline.from_toml(args.config)


def _progress_wanted(args: argparse.Namespace) -> bool:
    if args.json or args.progress == "never":
        return False
    return args.progress == "always" or sys.stderr.isatty()


def cmd_ingest(args: argparse.Namespace) -> int:
    """``ragloom ingest [PATH_OR_URL ...]``."""
    pipeline = _load_pipeline(args)
    with pipeline:
        source = args.sources or None
        if _progress_wanted(args):
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(
                TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), transient=True, console=_stderr_console(force=args.progress == "always"),
            ) as bar:
                task = bar.add_task("", total=None)

                def on_progress(step: Any) -> None:
                    bar.update(task, total=step.total or None, completed=step.done, description=_display_path(step.source))

                result = pipeline.ingest(source, loader=args.loader, tags=args.tags, progress=on_progress)
        else:
            result = pipeline.ingest(source, loader=args.loader, tags=args.tags)
    if args.json:
        _print_json(result.to_dict())
        return 0
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
    return 0


def _stderr_console(*, force: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=True, force_terminal=True if force else None)


def cmd_query(args: argparse.Namespace) -> int:
    """``ragloom query TEXT``."""
    from ragloom.pipeline import iter_results_as_dicts

    filter_spec = None
    if args.filter:
        try:
            filter_spec = json.loads(args.filter)
        except json.JSONDecodeError as exc:
            raise RagloomError(f"--filter is not valid JSON: {exc.msg} at column {exc.colno}") from None
    pipeline = _load_pipeline(args)
    with pipeline:
        results = pipeline.query(args.text, top_k=args.top_k, threshold=args.threshold, filter=filter_spec, top_n=args.top_n)
    if args.json:
        _print_json({"query": args.text, "results": list(iter_results_as_dicts(results))})
        return 0
    if not results:
        print("no results (is anything ingested? run `ragloom ingest`)")
        return 0
    for rank, result in enumerate(results, start=1):
        title = result.metadata.get("title")
        header = f"{rank}. [{result.score:.3f}] {_display_path(result.source)} [{result.span[0]}:{result.span[1]}]"
        print(header + (f" — {title}" if title else ""))
        snippet = " ".join(result.text.split())
        print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """``ragloom remove PATH_OR_URL ...``."""
    pipeline = _load_pipeline(args)
    removed = {}
    with pipeline:
        for source in args.sources:
            removed[source] = pipeline.remove_source(source)
    if args.json:
        _print_json({"removed": removed})
    else:
        for source, count in removed.items():
            print(f"removed {count} chunks of {source}" if count else f"nothing stored for {source}")
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


COMMANDS = {"ingest": cmd_ingest, "query": cmd_query, "remove": cmd_remove, "stats": cmd_stats, "plugins": cmd_plugins}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragloom`` command."""
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
        return int(handler(args) or 0)
    except RagloomError as exc:
        message = " ".join(str(exc).split("\n"))
        print(f"ragloom: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ragloom: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
