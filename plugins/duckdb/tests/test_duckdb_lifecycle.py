"""The file lock of a DuckDB store: released by a dropped pipeline, at interpreter exit, and explained when readers hold it."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragloom import Pipeline
from ragloom.errors import StoreError


def _child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=timeout, check=False)


WRITER = """
    import sys
    from ragloom import Pipeline
    pipeline = Pipeline.builder().store("duckdb", path=sys.argv[1]).build()
    print("documents", pipeline.ingest(sys.argv[2]).documents)
    pipeline.close()
"""


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text("The lamp dims in five steps.\n")
    return folder


def test_a_pipeline_dropped_without_close_releases_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "kb.duckdb")
    pipeline = Pipeline.builder().store("duckdb", path=path).build()
    pipeline.ingest(str(_corpus(tmp_path)))
    held = _child(WRITER, path, str(_corpus(tmp_path)))
    assert held.returncode != 0 and "lock" in held.stderr.lower()
    del pipeline
    gc.collect()
    done = _child(WRITER, path, str(_corpus(tmp_path)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "documents 1" in done.stdout


def test_a_pipeline_left_open_at_exit_closes_the_file_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "kb.duckdb"
    left_open = """
        import sys
        from ragloom import Pipeline
        keep = Pipeline.builder().store("duckdb", path=sys.argv[1]).build()
        keep.ingest(sys.argv[2])
        sys.modules["__main__"].keep = keep  # still referenced when the interpreter exits
    """
    done = _child(left_open, str(path), str(_corpus(tmp_path)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert not Path(f"{path}.wal").exists()  # closed (and checkpointed) at exit, not abandoned
    with Pipeline.builder().store("duckdb", path=str(path), read_only=True).build() as pipeline:
        assert len(pipeline.sources()) == 1


def test_a_writer_blocked_by_a_read_only_process_is_told_so(tmp_path: Path) -> None:
    path = str(tmp_path / "kb.duckdb")
    assert _child(WRITER, path, str(_corpus(tmp_path))).returncode == 0
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time
            from ragloom import Pipeline
            pipeline = Pipeline.builder().store("duckdb", path=sys.argv[1], read_only=True).build()
            print("open", flush=True)
            time.sleep(60)
        """), path],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
        with pytest.raises(StoreError, match="open read-only in another process") as caught:
            Pipeline.builder().store("duckdb", path=path).build()
        assert "open for writing" not in str(caught.value)
    finally:
        reader.kill()
        reader.wait()
    deadline = time.monotonic() + 10
    while True:  # the lock goes with the reader
        try:
            Pipeline.builder().store("duckdb", path=path).build().close()
            break
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
