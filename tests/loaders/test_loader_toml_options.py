"""Loader options given in TOML take effect through a real pipeline."""

from __future__ import annotations

from pathlib import Path

from ragloom import Pipeline


def test_loader_tables_in_toml_reach_the_loaders(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text(
        "<html><body><nav>Menu Home Login</nav><main><p>The lamp dims slowly.</p></main></body></html>", encoding="utf-8"
    )
    (docs / "note.md").write_text("---\ncategory: support\n---\nReset by holding both buttons.\n", encoding="utf-8")
    (tmp_path / "ragloom.toml").write_text(
        '[[sources]]\npath = "docs"\n\n[loaders.html]\nselector = "main"\n\n[loaders.markdown]\nstrip_frontmatter = false\n',
        encoding="utf-8",
    )
    pipeline = Pipeline.from_toml(tmp_path / "ragloom.toml")
    assert pipeline.ingest().documents == 2
    texts = {Path(hit.source).name: hit.text for hit in pipeline.query("lamp buttons", top_k=10)}
    assert texts["page.html"] == "The lamp dims slowly."  # the selector dropped the <nav>
    assert texts["note.md"].startswith("---\ncategory: support")  # frontmatter kept in the text
