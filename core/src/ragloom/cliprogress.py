"""Ingest progress for the ``ragloom`` command.

``--progress auto`` shows progress when stderr is a terminal; ``always`` shows
it anywhere. A live bar (rich) is drawn only on a terminal that can redraw a
line; a dumb terminal (``TERM=dumb``), a pipe or a log file gets plain lines
(``ingest 3/12 corpus/faq.md``), one per file. An executor that reports its
stages apart (ragloom-ray) gets one bar, or line, per stage
(``embedded 5/12 (31 chunks)``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

DUMB_TERMINALS = ("dumb", "unknown", "")


def progress_wanted(mode: str, *, json_output: bool, stream: TextIO | None = None) -> bool:
    """Whether ``--progress MODE`` shows progress (never under ``--json``)."""
    stream = stream or sys.stderr
    if json_output or mode == "never":
        return False
    return mode == "always" or stream.isatty()


def can_redraw(stream: TextIO | None = None) -> bool:
    """True when ``stream`` is a terminal that understands cursor movement."""
    stream = stream or sys.stderr
    return stream.isatty() and os.environ.get("TERM", "").lower() not in DUMB_TERMINALS


def _label(step: Any, describe: Callable[[str], str]) -> str:
    """``corpus/faq.md`` in-process; ``corpus/faq.md (31 chunks)`` for a stage reported apart."""
    where = describe(step.source) if step.source else ""
    if getattr(step, "stage", "ingest") == "ingest":
        return where
    return f"{where} ({step.chunks} chunks)".lstrip()


@contextmanager
def progress_display(describe: Callable[[str], str], stream: TextIO | None = None) -> Iterator[Callable[[Any], None]]:
    """A callback for :meth:`Pipeline.ingest` ``progress=``: a live bar (one per stage) or plain lines."""
    stream = stream or sys.stderr
    if not can_redraw(stream):

        def plain(step: Any) -> None:
            total = f"/{step.total}" if step.total else ""
            print(f"{getattr(step, 'stage', 'ingest')} {step.done}{total} {_label(step, describe)}", file=stream, flush=True)

        yield plain
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    console = Console(file=stream, force_terminal=True)
    columns = (TextColumn("[bold]{task.fields[stage]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, transient=True, console=console) as bar:
        tasks: dict[str, TaskID] = {}

        def live(step: Any) -> None:
            stage = getattr(step, "stage", "ingest")
            if stage not in tasks:
                tasks[stage] = bar.add_task("", total=None, stage=stage)
            bar.update(tasks[stage], total=step.total or None, completed=step.done, description=_label(step, describe))

        yield live
