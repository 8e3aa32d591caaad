"""The ingest progress display: one line or bar per stage when an executor reports its stages apart."""

from __future__ import annotations

import io

from ragloom import Progress
from ragloom.cliprogress import progress_display


class TerminalBuffer(io.StringIO):
    """A captured stream that says it is a terminal, so the live bar draws into it."""

    def isatty(self) -> bool:
        return True


def test_in_process_steps_print_as_before_and_stage_steps_name_stage_and_chunks() -> None:
    out = io.StringIO()
    with progress_display(lambda p: f"<{p}>", out) as show:
        show(Progress(source="a.md", done=1, total=3))
        show(Progress(source="", done=2, total=3, stage="chunked", chunks=7))
        show(Progress(source="b.md", done=2, total=3, stage="written", chunks=5))
    assert out.getvalue().splitlines() == ["ingest 1/3 <a.md>", "chunked 2/3 (7 chunks)", "written 2/3 <b.md> (5 chunks)"]


def test_the_live_display_draws_a_bar_per_stage(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TERM", "xterm-256color")
    out = TerminalBuffer()
    with progress_display(str, out) as show:
        for stage, done in (("chunked", 4), ("embedded", 3), ("written", 2)):
            show(Progress(source="", done=done, total=4, stage=stage, chunks=done * 10))
    drawn = out.getvalue()
    assert "\x1b[" in drawn
    for stage, done in (("chunked", 4), ("embedded", 3), ("written", 2)):
        assert stage in drawn and f"{done}/4" in drawn and f"({done * 10} chunks)" in drawn
