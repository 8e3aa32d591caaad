"""Golden tests: the chunks of two real documents are pinned in JSON fixtures.

Any change to a chunker's output fails here. When the change is intended,
regenerate, review the diff and run again:
``RAGLOOM_UPDATE_GOLDEN=1 pytest tests/chunkers/test_chunker_golden.py`` writes the new
output and still fails on every case that changed (it compares with the file as it was);
the next run, without the variable, passes once the new file is committed.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from chunker_checks import FIXTURES, check_spans

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.plugins import BuildContext, Registry
from ragloom.types import Document

TOKENS = {"size_unit": "tokens", "tokenizer": "minilm-tokenizer.json"}
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "readme.md": [
        ("markdown", {"size": 400, "overlap": 80}),
        ("markdown", {"size": 150}),
        ("recursive", {"size": 300, "overlap": 60}),
        ("sentence", {"size": 300, "overlap": 60}),
        ("fixed", {"size": 300, "overlap": 50}),
        ("semantic", {"min_size": 100, "max_size": 600}),
        ("recursive", {"size": 64, "overlap": 16, **TOKENS}),
    ],
    "article.txt": [
        ("recursive", {"size": 500, "overlap": 100}),
        ("recursive", {"size": 1000}),
        ("sentence", {"size": 500, "overlap": 100}),
        ("markdown", {"size": 400}),
        ("semantic", {"breakpoint": "threshold", "breakpoint_threshold": 0.1, "min_size": 200, "max_size": 1200}),
        ("sentence", {"size": 96, "overlap": 24, **TOKENS}),
    ],
}


def produce(document_name: str) -> list[dict[str, Any]]:
    registry = Registry()
    context = BuildContext(registry=registry, base_dir=FIXTURES, embedder=HashEmbedder(HashEmbedderConfig(dim=256)))
    text = (FIXTURES / document_name).read_text(encoding="utf-8")
    document = Document.create(text, document_name)
    out = []
    for name, options in CASES[document_name]:
        chunker = registry.build("chunker", name, options, context)
        chunks = chunker.chunk(document)
        out.append(
            {
                "chunker": name,
                "options": options,
                "chunks": [
                    {"start": c.start, "end": c.end, "text": c.text, **({"headings": c.metadata["headings"]} if name == "markdown" else {})}
                    for c in chunks
                ],
            }
        )
    return out


@pytest.mark.parametrize("document_name", sorted(CASES))
def test_output_matches_the_pinned_chunks(document_name: str) -> None:
    golden = FIXTURES / f"golden-{document_name.replace('.', '-')}.json"
    produced = produce(document_name)
    expected = json.loads(golden.read_text(encoding="utf-8"))  # read before any update: the comparison is with the pinned file
    if os.environ.get("RAGLOOM_UPDATE_GOLDEN"):
        # the new output is written for review, and this run still fails when it differs from what was pinned
        golden.write_text(json.dumps(produced, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    text = (FIXTURES / document_name).read_text(encoding="utf-8")
    assert [(case["chunker"], case["options"]) for case in expected] == [(c["chunker"], c["options"]) for c in produced]
    for want, got in zip(expected, produced, strict=True):
        assert want["chunks"], "a golden case with no chunks pins nothing"
        for chunk in want["chunks"]:
            assert text[chunk["start"] : chunk["end"]] == chunk["text"], "the fixture itself must hold exact offsets"
        assert got["chunks"] == want["chunks"], f"{got['chunker']} {got['options']} changed its output on {document_name}"


def test_golden_markdown_output_reads_well() -> None:
    """Spot checks on the pinned README chunks, so the fixture is not just whatever came out."""
    produced = produce("readme.md")[0]["chunks"]
    text = (FIXTURES / "readme.md").read_text(encoding="utf-8")
    check_spans(text, [(c["start"], c["end"]) for c in produced], 400, covered_from=text.index("# lumen-cli"))
    assert not any("version: 2.4.1" in c["text"] for c in produced), "frontmatter excluded"
    tables = [c for c in produced if "| Code | Meaning |" in c["text"]]
    assert tables and tables[0]["text"].endswith("restore the factory firmware |"), "the error-code table stays whole"
    commands = [c["text"] for c in produced if "| `" in c["text"]]
    assert len(commands) == 2 and all(t.endswith("|") or t.endswith("output.") for t in commands), "a table over size is cut at rows"
    fences = [c for c in produced if "```toml" in c["text"]]
    assert fences and fences[0]["text"].count("```") == 2 and fences[0]["headings"] == ["lumen-cli", "Configuration"]
    assert any(c["headings"] == ["lumen-cli", "Installation", "Linux"] for c in produced)
    # "Error codes" underlined with dashes is a level-2 (setext) heading: a sibling of "Troubleshooting"
    assert any(c["headings"] == ["lumen-cli", "Error codes", "Firmware updates"] for c in produced)
