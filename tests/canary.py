"""A canary outside an allowed root, linked from inside it: its text must never be ingested or echoed."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

CANARY_TEXT = "CANARY-7f3a secret payroll figures that must never leave this file"


@attrs.frozen
class Canary:
    root: Path  # the allowed root
    outside: Path  # the canary file, outside the root
    links: tuple[Path, ...]  # symlinks inside the root: to the file, and to its folder


def make_canary(tmp_path: Path) -> Canary:
    """``allowed/`` with one ordinary note and two symlinks out to ``secret/canary.md``."""
    secret = tmp_path / "secret"
    secret.mkdir()
    outside = secret / "canary.md"
    outside.write_text(f"# Canary\n\n{CANARY_TEXT}\n", encoding="utf-8")
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nAn ordinary note about onboarding.\n", encoding="utf-8")
    file_link = root / "linked.md"
    dir_link = root / "linked_dir"
    os.symlink(outside, file_link)
    os.symlink(secret, dir_link, target_is_directory=True)
    return Canary(root=root, outside=outside, links=(file_link, dir_link))


def leaked(text: str) -> bool:
    """Whether ``text`` (a response body, a stored chunk …) carries the canary."""
    return "CANARY-7f3a" in text


def stored_texts(pipeline: object) -> str:
    """Every source name and chunk text in the pipeline's namespace, joined (for a leak check)."""
    store = pipeline.store  # type: ignore[attr-defined]
    namespace = pipeline.namespace  # type: ignore[attr-defined]
    parts = list(store.sources(namespace))
    if hasattr(store, "chunks"):
        parts.extend(c.text for c in store.chunks(namespace))
    else:
        parts.extend(r.text for r in store.keyword_search(namespace, "CANARY-7f3a payroll figures", top_k=50))
    return "\n".join(parts)
