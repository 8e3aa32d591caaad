"""The guard for the whole class: hostile input through every public entry point.

Generated input (deep nesting, NUL bytes, huge numbers, wrong types, odd Unicode)
goes through the CLI (``main``), ``Pipeline`` methods (memory and DuckDB
stores), both agent tools, every built-in loader, the filter parser and config
loading. Only ``RagloomError`` subclasses may come out (the tools answer
``{"error": ...}``), and the CLI never prints a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom import Pipeline
from ragloom.cli import main
from ragloom.config import PipelineConfig
from ragloom.errors import RagloomError
from ragloom.filters import parse_filter
from ragloom.loaders import CsvLoader, HtmlLoader, JsonlLoader, JsonLoader, MarkdownLoader, PdfLoader, TextLoader
from ragloom.tools import rag_ingest_tool, rag_search_tool

GUARD = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# ---------------------------------------------------------------------- hostile values

ODD_TEXT = st.sampled_from(
    ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\u202eevil", "e\u0301" * 50, "\ufeff", "😀" * 10, "\r\n\t", "$and", "$where", "../" * 20, "~", "%00", "\\\\?\\C:"]
)
TEXT = st.one_of(ODD_TEXT, st.text(max_size=40), st.text(st.characters(codec="utf-8", exclude_categories=()), max_size=20))
_HUGE = {"googol-ish": 10**5000, "-googol-ish": -(10**5000), "2**63": 2**63, "-2**63-1": -(2**63) - 1, "2**64": 2**64,
         "1e308": 1e308, "-1e308": -1e308, "inf": math.inf, "-inf": -math.inf, "nan": math.nan, "0": 0, "-1": -1}  # fmt: skip


def _huge(name: str) -> Any:
    return _HUGE[name]


HUGE = st.sampled_from(sorted(_HUGE)).map(_huge)  # by name: hypothesis cannot repr a 5,000-digit int
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), HUGE, TEXT, st.binary(max_size=8))


class Deep:
    """A value nested ``depth`` levels deep, built only inside the test (hypothesis cannot repr it)."""

    def __init__(self, depth: int, kind: str):
        self.depth, self.kind = depth, kind

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.kind!r})"

    def build(self) -> Any:
        value: Any = 1
        for _ in range(self.depth):
            value = {"$and": [value]} if self.kind == "and" else ({"a": value} if self.kind == "dict" else [value])
        return value


def real(value: Any) -> Any:
    """``value`` with every Deep marker in it built."""
    if isinstance(value, Deep):
        return value.build()
    if isinstance(value, list):
        return [real(v) for v in value]
    if isinstance(value, dict):
        return {k: real(v) for k, v in value.items()}
    return value


DEEP = st.builds(Deep, st.sampled_from([40, 900, 3000, 20000]), st.sampled_from(["and", "dict", "list"]))
VALUE = st.recursive(st.one_of(SCALAR, DEEP), lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)
HOSTILE = st.one_of(VALUE, DEEP)


def _json_safe(value: Any) -> Any:
    """The value as a model could send it through JSON (bytes and NaN have no JSON form)."""
    try:
        return json.loads(json.dumps(value, default=repr, allow_nan=False))
    except (ValueError, RecursionError, TypeError):
        return repr(type(value))


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "docs").mkdir()
        (base / "docs" / "a.md").write_text("---\ntitle: A\n---\n# A\nThe lamp dims in five steps.\n")
        (base / "docs" / "b.txt").write_text("Warranty lasts two years.\n")
        (base / "outside.txt").write_text("outside the root\n")
        yield base


@pytest.fixture(scope="module")
def pipelines(root: Path) -> Iterator[list[Pipeline]]:
    memory = Pipeline.builder().base_dir(root).ingest_options(on_error="skip").build()
    duck = Pipeline.builder().base_dir(root).store("duckdb", path=str(root / "kb.duckdb")).ingest_options(on_error="skip").build()
    for pipeline in (memory, duck):
        pipeline.ingest(str(root / "docs"))
    yield [memory, duck]
    for pipeline in (memory, duck):
        pipeline.close()


def _only_ragloom_errors(call: Any) -> Any:
    try:
        return call()
    except RagloomError:
        return None


# ---------------------------------------------------------------------- the guard


@GUARD
@given(spec=HOSTILE)
def test_filter_parser(spec: Any) -> None:
    _only_ragloom_errors(lambda: parse_filter(real(spec)))


@GUARD
@given(data=st.dictionaries(st.sampled_from(["store", "chunker", "embedder", "retriever", "ingest", "sources", "loaders", "namespace", "x"]), HOSTILE, max_size=3))
def test_config_from_dict(data: dict[str, Any]) -> None:
    _only_ragloom_errors(lambda: PipelineConfig.from_dict(real(data)))


def _deep_toml(depth: int, kind: str) -> str:
    return "a = " + "[" * depth + "1" + "]" * depth if kind == "array" else "a = " + "{b = " * depth + "1" + "}" * depth


@GUARD
@given(text=st.one_of(TEXT, st.builds(_deep_toml, st.sampled_from([40, 900, 3000, 20000]), st.sampled_from(["array", "table"]))))
def test_config_from_toml(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ragloom.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _only_ragloom_errors(lambda: PipelineConfig.from_toml(path))


@GUARD
@given(text=TEXT, top_k=st.one_of(st.none(), st.integers(-5, 10**6), HUGE), spec=st.one_of(st.none(), HOSTILE), threshold=st.one_of(st.none(), st.floats(), HUGE), which=st.integers(0, 1))
def test_pipeline_query(pipelines: list[Pipeline], text: str, top_k: Any, spec: Any, threshold: Any, which: int) -> None:
    _only_ragloom_errors(lambda: pipelines[which].query(text, top_k=top_k, threshold=threshold, filter=real(spec)))


def _stays_home(text: str) -> bool:
    """No path that could walk out of the test's folder (``..``, ``/``, ``~``): the guard must never ingest the machine."""
    return "/" not in text and ".." not in text and not text.startswith("~") and "\\" not in text


HOME_TEXT = TEXT.filter(_stays_home)


@GUARD
@given(source=st.one_of(HOME_TEXT, st.sampled_from(["docs", "docs/a.md", "/dev/zero", "http://[::1", "file://docs", "docs/\x00"])), which=st.integers(0, 1))
def test_pipeline_ingest_and_remove(pipelines: list[Pipeline], root: Path, source: str, which: int) -> None:
    pipeline = pipelines[which]
    _only_ragloom_errors(lambda: pipeline.ingest(source))
    _only_ragloom_errors(lambda: pipeline.remove_source(source))
    pipeline.stats()
    pipeline.ingest(str(root / "docs"))  # `remove docs` (or `.`) is a legitimate removal: restore what the other tests query


@GUARD
@given(arguments=st.one_of(HOSTILE, st.dictionaries(st.sampled_from(["query", "top_k", "filter", "source"]), HOSTILE, max_size=3), TEXT))
def test_tools_answer_errors(pipelines: list[Pipeline], root: Path, arguments: Any) -> None:
    search, ingest = rag_search_tool(pipelines[0]), rag_ingest_tool(pipelines[0], allowed_roots=[root / "docs"])
    built = real(arguments)
    for tool in (search, ingest):
        for sent in (built, _json_safe(built)):
            answer = tool(sent)
            assert isinstance(answer, dict) and ("error" in answer or "results" in answer or "documents" in answer), answer
    assert ingest({"source": str(root / "outside.txt")})["error"]


LOADERS = {
    ".txt": TextLoader, ".md": MarkdownLoader, ".html": HtmlLoader, ".json": JsonLoader,
    ".jsonl": JsonlLoader, ".csv": CsvLoader, ".pdf": PdfLoader,
}  # fmt: skip


def _file_content(value: Any, suffix: str) -> bytes:
    if isinstance(value, bytes):
        return value
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = "[" * 100_000
    if suffix == ".md":
        return f"---\nk: {text[:2000]}\nd: 2024-13-45\n---\n# T\n".encode("utf-8", "surrogatepass")
    if suffix == ".pdf":
        return b"%PDF-1.4\n1 0 obj\n" + text.encode("utf-8", "surrogatepass")[:2000] + b"\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF"
    return text.encode("utf-8", "surrogatepass")


@GUARD
@given(value=st.one_of(HOSTILE, st.binary(max_size=300)), suffix=st.sampled_from(sorted(LOADERS)))
def test_every_loader(tmp_path: Path, value: Any, suffix: str) -> None:
    path = tmp_path / f"hostile{suffix}"
    path.write_bytes(_file_content(real(value), suffix))
    _only_ragloom_errors(lambda: list(LOADERS[suffix]().load(str(path))))


@GUARD
@given(argv=st.lists(st.one_of(HOME_TEXT.filter(lambda t: "\x00" not in t), st.sampled_from(["-k", "0", "-5", "--filter", "[" * 3000, "--json", "--loader", "nope", "-c", "/proc/x", "--threshold", "nan", "--tag"])), max_size=5), command=st.sampled_from(["ingest", "query", "remove", "stats", "plugins"]))
def test_cli_never_prints_a_traceback(root: Path, argv: list[str], command: str) -> None:
    config = root / "guard.toml"
    config.write_text('[store]\ntype = "duckdb"\npath = "guard.duckdb"\n[ingest]\non_error = "skip"\n')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([command, "-c", str(config), *argv])
        except SystemExit as exit_:  # argparse usage errors: a usage line, exit 2
            code = exit_.code
    assert "Traceback" not in err.getvalue() + out.getvalue()
    assert code in (0, 1, 2, 3), (code, err.getvalue())  # 3: some sources failed
    if code == 1:
        message = err.getvalue()
        if message.startswith("{"):  # under --json (or an abbreviation argparse accepts) errors are one JSON object
            assert set(json.loads(message.splitlines()[0])) == {"error", "type", "source"}, message
        else:
            assert message.startswith("ragloom: error: "), message


def test_the_guard_reaches_the_real_parts(pipelines: list[Pipeline]) -> None:
    """The pipelines the guard drives hold real data, so its queries and filters are evaluated, not short-circuited."""
    for pipeline in pipelines:
        assert pipeline.stats()["chunks"] >= 2
        assert pipeline.query("lamp", top_k=1, filter={"$or": [{"title": "A"}, {"file_name": "b.txt"}]})
    assert sys.getrecursionlimit() >= 1000
