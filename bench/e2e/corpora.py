"""The corpora of the end-to-end benchmark: SciFact, generated Markdown files, a generated large corpus."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path


def _find_scifact() -> Path:
    """``$RAGLOOM_SCIFACT``, else ``shared/data/scifact`` beside the repository (or beside its worktrees' folder)."""
    if os.environ.get("RAGLOOM_SCIFACT"):
        return Path(os.environ["RAGLOOM_SCIFACT"])
    for parent in Path(__file__).resolve().parents[2:5]:
        candidate = parent / "shared" / "data" / "scifact"
        if candidate.exists():
            return candidate
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"


SCIFACT = _find_scifact()

WORDS = (
    "lamp light warm cold desk bulb switch cable power socket glass shade brass copper room window "
    "table chair wall floor ceiling paper note order error warranty repair return shipping price "
    "colour white black amber green blue bright dim timer sensor battery charge hour week month"
).split()


def scifact_documents(root: Path = SCIFACT, limit: int | None = None) -> list[tuple[str, str]]:
    """``(id, title + blank line + abstract)`` of the SciFact corpus, in file order."""
    out = []
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            out.append((str(record["_id"]), f"{record['title'].strip()}\n\n{record['text'].strip()}"))
            if limit is not None and len(out) >= limit:
                break
    return out


def scifact_queries(root: Path = SCIFACT, limit: int = 300) -> list[str]:
    """Query texts of the SciFact test split (the first ``limit``)."""
    wanted = {line.split("\t")[0] for line in (root / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]}
    texts = []
    with (root / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["_id"] in wanted:
                texts.append(record["text"])
    return texts[:limit]


def note_text(rng: random.Random, number: int, size: int = 2000) -> str:
    """A Markdown note of about ``size`` characters: a heading and paragraphs of seeded random words."""
    parts = [f"# Note {number}: {' '.join(rng.choices(WORDS, k=4))}\n"]
    length = len(parts[0])
    while length < size:
        paragraph = " ".join(rng.choices(WORDS, k=rng.randint(25, 60))).capitalize() + "."
        parts.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(parts)


def markdown_directory(root: Path, files: int, size: int = 2000, seed: int = 7) -> int:
    """Write ``files`` Markdown notes in folders of 500; return the bytes written (skips an existing complete tree)."""
    marker = root / f".complete-{files}-{size}-{seed}"
    if marker.exists():
        return int(marker.read_text())
    rng = random.Random(seed)
    total = 0
    for i in range(files):
        folder = root / f"part{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = note_text(rng, i, size)
        (folder / f"note{i:05d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    marker.write_text(str(total))
    return total


def large_corpus(root: Path, megabytes: int, single_file_mb: int, seed: int = 11) -> dict[str, int]:
    """About ``megabytes`` MB: Markdown notes of ~20 kB plus one JSONL and one CSV file of ``single_file_mb`` MB each."""
    marker = root / f".complete-{megabytes}-{single_file_mb}-{seed}"
    if marker.exists():
        return json.loads(marker.read_text())
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    target = single_file_mb * 1_000_000
    written = 0
    with (root / "records.jsonl").open("w", encoding="utf-8") as handle:
        number = 0
        while written < target:
            line = json.dumps({"id": number, "text": note_text(rng, number, 1500)}) + "\n"
            handle.write(line)
            written += len(line)
            number += 1
    jsonl_bytes = written
    written = 0
    with (root / "table.csv").open("w", encoding="utf-8") as handle:
        handle.write("id,title,body\n")
        number = 0
        while written < target:
            body = note_text(rng, number, 1500).replace('"', "'").replace("\n", " ")
            line = f'{number},"Row {number}","{body}"\n'
            handle.write(line)
            written += len(line)
            number += 1
    csv_bytes = written
    notes_target = megabytes * 1_000_000 - jsonl_bytes - csv_bytes
    notes = 0
    written = 0
    while written < notes_target:
        folder = root / "notes" / f"part{notes // 500:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = "\n\n".join(note_text(rng, notes * 10 + k, 2000) for k in range(10))
        (folder / f"note{notes:06d}.md").write_text(text, encoding="utf-8")
        written += len(text.encode("utf-8"))
        notes += 1
    info = {"bytes": jsonl_bytes + csv_bytes + written, "files": notes + 2, "jsonl_bytes": jsonl_bytes, "csv_bytes": csv_bytes}
    marker.write_text(json.dumps(info))
    return info
