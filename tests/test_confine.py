"""rag_ingest path confinement against real files, real symlinks and a real race."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ragloom import LoaderError, Pipeline
from ragloom.confine import ConfinementError, PathConfinement, confined
from ragloom.loaders.base import open_limited
from ragloom.tools import rag_ingest_tool, rag_search_tool

CANARY = "canary-outside-the-root-7f3a"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text(f"{CANARY} secret text\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "canary.md").write_text(f"# {CANARY}\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text("an ordinary file inside the root\n")
    return root, outside


def _stored_text(pipeline: Pipeline) -> str:
    results = pipeline.query(CANARY, top_k=50)
    return " ".join(r.text for r in results) + " ".join(pipeline.sources())


def _tool(root: Path, on_error: str = "skip") -> tuple[Pipeline, object]:
    pipeline = Pipeline.builder().base_dir(root).ingest_options(on_error=on_error).build()
    return pipeline, rag_ingest_tool(pipeline, allowed_roots=[root])


def test_file_symlinks_out_of_the_root_are_not_followed(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "link.txt").symlink_to(outside / "canary.txt")  # absolute link
    (root / "rel.txt").symlink_to(os.path.relpath(outside / "canary.txt", root))  # relative link
    (root / "hop1.txt").symlink_to(root / "hop2.txt")  # a chain that ends outside
    (root / "hop2.txt").symlink_to(outside / "canary.txt")
    (root / "dirlink").symlink_to(outside / "sub")  # a folder link
    pipeline, ingest = _tool(root)

    for name in ("link.txt", "rel.txt", "hop1.txt", "dirlink/canary.md", str(root / "link.txt")):
        answer = ingest({"source": name})
        assert "outside" in answer["error"], (name, answer)
    answer = ingest({"source": "."})  # the folder walk meets every link
    assert answer["documents"] == 1, answer
    failed = {Path(f["source"]).name: f["reason"] for f in answer["failed"]}
    assert set(failed) == {"link.txt", "rel.txt", "hop1.txt", "hop2.txt"}
    assert all("symbolic link" in reason for reason in failed.values())
    assert CANARY not in _stored_text(pipeline)
    assert pipeline.sources() == [str(root / "inside.txt")]
    strict, ingest = _tool(root, on_error="fail")
    assert "symbolic link" in ingest({"source": "."})["error"]
    assert CANARY not in _stored_text(strict)


def test_links_inside_the_root_are_refused_in_a_walk_but_a_resolved_path_is_read(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "alias.txt").symlink_to(root / "inside.txt")
    pipeline, ingest = _tool(root)
    answer = ingest({"source": "alias.txt"})  # resolved before the check: the real file inside the root
    assert answer["documents"] == 1 and pipeline.sources() == [str(root / "inside.txt")]


def test_open_refuses_a_link_swapped_in_after_the_check(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("inside\n")
    confinement = PathConfinement([root])
    checked = confinement.locate("docs/a.txt", root)
    (root / "docs" / "a.txt").unlink()
    (root / "docs" / "a.txt").symlink_to(outside / "canary.txt")
    with pytest.raises(ConfinementError, match="symbolic link"):
        confinement.open(checked)
    (root / "docs" / "a.txt").unlink()
    (root / "docs").rename(root / "docs-old")
    (root / "docs").symlink_to(outside)  # a folder on the way swapped for a link
    (outside / "a.txt").write_text(CANARY)
    with pytest.raises(ConfinementError, match="symbolic link"):
        confinement.open(checked)
    with confined(confinement), pytest.raises(ConfinementError, match="outside"):
        open_limited(str(outside / "canary.txt"))


def test_a_replaced_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("x")
    confinement = PathConfinement([root])
    root.rename(tmp_path / "old")
    root.mkdir()
    (root / "a.txt").write_text("x")
    with pytest.raises(ConfinementError, match="replaced"):
        confinement.open(str(root / "a.txt"))


def test_race_swapping_files_and_folders_for_links_never_reads_outside(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / "inner.txt").write_text(f"{CANARY} through a folder link\n")
    target = root / "race.txt"
    folder = root / "box"
    pipeline, ingest = _tool(root)
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for make in (lambda: target.write_text("honest\n"), lambda: target.symlink_to(outside / "canary.txt")):
                try:
                    target.unlink()
                except FileNotFoundError:
                    pass
                make()
            try:
                if folder.is_symlink():
                    folder.unlink()
                    folder.mkdir()
                    (folder / "inner.txt").write_text("honest\n")
                else:
                    for child in folder.iterdir():
                        child.unlink()
                    folder.rmdir()
                    folder.symlink_to(outside)
            except FileNotFoundError:
                folder.mkdir(exist_ok=True)

    folder.mkdir()
    (folder / "inner.txt").write_text("honest\n")
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    answers = []
    try:
        for _ in range(150):
            for source in ("race.txt", "box/inner.txt", "box", "."):
                answers.append((source, ingest({"source": source})))
    finally:
        stop.set()
        thread.join()
    assert all(isinstance(a, dict) and ("error" in a or "documents" in a) for _, a in answers)
    assert any(a.get("documents") for _, a in answers)  # the honest files were read sometimes
    assert CANARY not in _stored_text(pipeline)


@pytest.mark.parametrize("source", ["race.txt", "box/race.txt", "box"])
def test_swap_between_check_and_read_is_refused(layout: tuple[Path, Path], source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The swap is injected right after the check passes, so every run loses the race."""
    root, outside = layout
    (root / "box").mkdir()
    for path in (root / "race.txt", root / "box" / "race.txt"):
        path.write_text("honest\n")
    (outside / "race.txt").write_text(f"{CANARY} via a swapped folder\n")
    checked = PathConfinement.locate

    def check_then_swap(self: PathConfinement, path: str, base_dir: object = None) -> str:
        located = checked(self, path, base_dir)
        if source == "race.txt":
            (root / "race.txt").unlink()
            (root / "race.txt").symlink_to(outside / "canary.txt")
        else:
            (root / "box").rename(root / "box-old")
            (root / "box").symlink_to(outside)
        return located

    monkeypatch.setattr(PathConfinement, "locate", check_then_swap)
    pipeline, ingest = _tool(root)
    answer = ingest({"source": source})
    assert answer.get("documents", 0) == 0, answer
    reasons = [f["reason"] for f in answer.get("failed", [])] + [answer.get("error", "")]
    assert any("symbolic link" in r or "outside" in r for r in reasons), answer
    assert CANARY not in _stored_text(pipeline)


def test_every_hostile_argument_returns_an_error(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    pipeline, ingest = _tool(root)
    search = rag_search_tool(pipeline)
    deep: dict = {"a": 1}
    for _ in range(3000):
        deep = {"$and": [deep]}
    assert "nested deeper" in search({"query": "x", "filter": deep})["error"]
    listy: list = [1]
    for _ in range(5000):
        listy = [listy]
    assert "error" in search({"query": "x", "filter": {"a": {"$in": [listy]}}})
    assert "NUL" in ingest({"source": "a\x00b"})["error"]
    assert "error" in ingest({"source": ["x"]})
    odd = ingest({"source": "\udcff.txt"})
    assert "error" in odd or odd["failed"], odd
    assert "error" in ingest("[1, 2]")
    assert "not allowed" in ingest({"source": "data://text/plain,x"})["error"]
    loop = root / "loop"
    loop.symlink_to(root / "loop")
    assert "error" in ingest({"source": "loop"}) or ingest({"source": "loop"})["documents"] == 0
    fifo = root / "x.txt"
    os.mkfifo(fifo)
    answer = ingest({"source": "x.txt"})
    assert "regular file" in answer["failed"][0]["reason"], answer


def test_a_sibling_folder_sharing_the_roots_name_as_prefix_is_outside(tmp_path: Path) -> None:
    """Root ``docs`` does not allow ``docs-secret`` or ``docs2``: the prefix check includes the separator."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ok.txt").write_text("an allowed file\n")
    for sibling in ("docs-secret", "docs2"):
        (tmp_path / sibling).mkdir()
        (tmp_path / sibling / "key.txt").write_text(f"{CANARY} in {sibling}\n")
    confinement = PathConfinement([root])
    assert confinement.locate(root / "ok.txt") == os.path.realpath(root / "ok.txt")
    assert confinement.locate(root) == os.path.realpath(root)  # the root itself is inside
    os.close(confinement.open(str(root / "ok.txt")))
    for sibling in ("docs-secret", "docs2"):
        with pytest.raises(ConfinementError, match="outside"):
            confinement.locate(tmp_path / sibling / "key.txt")
        with pytest.raises(ConfinementError, match="outside"):
            confinement.locate(tmp_path / sibling)
        with pytest.raises(ConfinementError, match="outside"):
            confinement.open(str(tmp_path / sibling / "key.txt"))
        with confined(confinement), pytest.raises(ConfinementError, match="outside"):
            open_limited(str(tmp_path / sibling / "key.txt"))
    pipeline, ingest = _tool(root)
    for source in (str(tmp_path / "docs-secret"), str(tmp_path / "docs-secret" / "key.txt"), "../docs2/key.txt"):
        answer = ingest({"source": source})  # type: ignore[operator]
        assert "error" in answer and "outside" in answer["error"], answer
    assert CANARY not in _stored_text(pipeline) and pipeline.store.count(pipeline.namespace) == 0
    assert ingest({"source": "ok.txt"})["sources"] == 1  # type: ignore[operator]


def _refusal(call: object, *args: object) -> LoaderError:
    with pytest.raises(LoaderError) as info:
        call(*args)  # type: ignore[operator]
    return info.value


def test_every_refusal_of_open_names_the_path_and_the_reason(layout: tuple[Path, Path]) -> None:
    """Each way ``open`` refuses is its own error class, message and source (what a model and a log read)."""
    root, outside = layout
    confinement = PathConfinement([root])
    (root / "sub").mkdir()
    (root / "link.txt").symlink_to(outside / "canary.txt")
    (root / "sub" / "deeper").symlink_to(outside / "sub")
    cases = [
        (str(root / "a\x00b.txt"), ConfinementError, "path contains a NUL byte", str(root / "a\\0b.txt")),
        (str(outside / "canary.txt"), ConfinementError, "path is outside the folders this tool may read", str(outside / "canary.txt")),
        (str(root), LoaderError, "is a directory, not a file", str(root)),
        (str(root / "missing.txt"), LoaderError, "file not found", str(root / "missing.txt")),
        (str(root / "link.txt"), ConfinementError, "reaching it would follow a symbolic link; links are not followed here", str(root / "link.txt")),
        (str(root / "sub" / "deeper" / "canary.md"), ConfinementError, "reaching it would follow a symbolic link; links are not followed here", str(root / "sub" / "deeper" / "canary.md")),
        (str(root / "inside.txt" / "x"), LoaderError, "cannot open: Not a directory", str(root / "inside.txt" / "x")),
        (str(root / ("n" * 300)), LoaderError, "cannot open: File name too long", str(root / ("n" * 300))),
    ]
    for path, kind, reason, source in cases:
        error = _refusal(confinement.open, path)
        assert type(error) is kind, (path, error)
        assert error.reason == reason and error.source == source, (error.reason, error.source)  # type: ignore[attr-defined]
        assert str(error) == f"{source}: {reason}"


def test_a_descriptor_from_open_is_read_only_and_not_inherited(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    descriptor = PathConfinement([root]).open(str(root / "inside.txt"))
    try:
        assert not os.get_inheritable(descriptor)
        assert os.read(descriptor, 100) == b"an ordinary file inside the root\n"
        with pytest.raises(OSError):
            os.write(descriptor, b"x")
    finally:
        os.close(descriptor)


def test_every_refusal_of_locate_and_of_the_roots_names_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "file.txt").write_text("x")
    confinement = PathConfinement([root])
    error = _refusal(confinement.locate, "a\x00b")
    assert type(error) is ConfinementError and str(error).endswith("path contains a NUL byte")
    error = _refusal(confinement.locate, tmp_path / "file.txt")
    assert type(error) is ConfinementError and error.source == str(tmp_path / "file.txt")  # type: ignore[attr-defined]
    assert error.reason == "path is outside the folders this tool may read"  # type: ignore[attr-defined]
    assert confinement.locate("sub/x.txt", base_dir=root) == str(root / "sub" / "x.txt")
    assert confinement.locate(root / "a" / ".." / "b.txt") == str(root / "b.txt")
    error = _refusal(confinement.locate, root / ".." / "file.txt")
    assert error.source == str(tmp_path / "file.txt")  # type: ignore[attr-defined]
    error = _refusal(PathConfinement, [tmp_path / "file.txt"])
    assert type(error) is ConfinementError and error.reason == "allowed folder is not a directory"  # type: ignore[attr-defined]
    assert error.source == str(tmp_path / "file.txt")  # type: ignore[attr-defined]
    error = _refusal(PathConfinement, [tmp_path / "nowhere"])
    assert type(error) is ConfinementError and error.reason.startswith("allowed folder cannot be read: ")  # type: ignore[attr-defined]
    assert error.source == str(tmp_path / "nowhere")  # type: ignore[attr-defined]
    two = PathConfinement([root, str(root) + "/"])
    assert [r[0] for r in two.roots] == [str(root), str(root)]
    assert two.roots[0][1:] == (os.stat(root).st_dev, os.stat(root).st_ino)


def test_locate_resolves_a_relative_path_against_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.chdir(root)
    confinement = PathConfinement([root])
    assert confinement.locate("notes/a.txt") == str(root / "notes" / "a.txt")
    with pytest.raises(ConfinementError, match="outside"):
        confinement.locate("../elsewhere.txt")


def test_the_filesystem_root_as_allowed_folder_allows_every_path(tmp_path: Path) -> None:
    confinement = PathConfinement(["/"])
    assert confinement.roots[0][0] == "/"
    assert confinement.locate(tmp_path / "x.txt") == str(tmp_path / "x.txt")
    (tmp_path / "x.txt").write_text("readable\n")
    descriptor = confinement.open(str(tmp_path / "x.txt"))
    try:
        assert os.read(descriptor, 100) == b"readable\n"
    finally:
        os.close(descriptor)


def test_a_replaced_or_removed_root_names_the_path_asked_for(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    confinement = PathConfinement([root])
    root.rename(tmp_path / "old")
    root.mkdir()
    (root / "a.txt").write_text("x")
    error = _refusal(confinement.open, str(root / "a.txt"))
    assert type(error) is ConfinementError and str(error) == f"{root / 'a.txt'}: allowed folder was replaced since the tool was made"
    (root / "a.txt").unlink()
    root.rmdir()
    error = _refusal(confinement.open, str(root / "a.txt"))
    assert type(error) is LoaderError and str(error) == f"{root / 'a.txt'}: file not found"
