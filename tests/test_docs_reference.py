"""Every option of every installed component is documented in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from ragloom.plugins import Registry

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_component_option_appears_in_the_docs() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in DOCS.rglob("*.md"))
    missing = []
    for info in Registry().all():
        if f"`{info.name}`" not in text:
            missing.append(f"{info.stage} {info.name}")
        if info.config is None:
            continue
        for field in attrs.fields(info.config):
            if not _documented(field.name, text):
                missing.append(f"{info.stage} {info.name}: option {field.name}")
    assert not missing, "undocumented: " + ", ".join(missing)


def _documented(name: str, text: str) -> bool:
    """Shown as `name`, as `name = ...`, or as a `name = ...` line of a TOML example."""
    pattern = rf"`{re.escape(name)}`|`{re.escape(name)}\s*=|^#?\s*{re.escape(name)}\s*="
    return re.search(pattern, text, re.MULTILINE) is not None
