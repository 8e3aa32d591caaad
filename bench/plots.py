"""Bar charts for docs/benchmarks.md, drawn from the measured tables in docs/benchmarks/*.md.

Each benchmark script writes its table into its page; this script reads those
tables back (first table of a page unless told otherwise) and draws them, so a
plot never holds numbers that are not in a results table.

    pip install matplotlib && python bench/plots.py
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def tables(page: Path) -> list[list[dict[str, str]]]:
    """Every Markdown table of a page, as lists of {header: cell} rows."""
    found, current, header = [], [], None
    for line in page.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.replace("**", "").strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                current.append(dict(zip(header, cells, strict=False)))
        elif header is not None:
            found.append(current)
            current, header = [], None
    return found


def number(cell: str) -> float:
    match = re.search(r"[-+]?\d[\d,]*\.?\d*", cell)
    return float(match.group(0).replace(",", "")) if match else float("nan")


def bars(rows: list[dict[str, str]], label: str, value: str, title: str, out: Path, highlight: str = "ragloom") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r[label].replace("`", "") for r in rows]
    values = [number(r[value]) for r in rows]
    colors = ["#2a6f97" if n.lower().startswith(highlight) else "#adb5bd" for n in names]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.4))
    ax.barh(range(len(rows)), values, color=colors)
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(value)
    ax.set_title(title, fontsize=10)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:g}", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print("wrote", out)


def e2e_chart(results: Path = Path(__file__).resolve().parent / "results" / "e2e.json") -> None:
    """End-to-end ingest documents/s per framework on SciFact, from bench/results/e2e.json (bench/e2e/run.py)."""
    import json
    import sys

    if not results.exists():
        return
    sys.path.insert(0, str(results.parents[1] / "e2e"))
    from report import label

    report = json.loads(results.read_text(encoding="utf-8"))
    rows = [
        {"framework": label(r["spec"]), "documents/s": f"{r['documents'] / r['first']['seconds']:.1f}"}
        for r in report.get("ingest", [])
        if "error" not in r and r["spec"]["corpus"] == "scifact" and r["spec"].get("embedder", "hash") == "hash"
    ]
    if rows:
        title = f"SciFact end-to-end ingest, hash embedder, documents/s (higher is better; {report['machine']['date']})"
        bars(rows, "framework", "documents/s", title, DOCS / "e2e.png")


def main() -> None:
    e2e_chart()
    chunking = tables(DOCS / "chunking.md")[0]
    bars(chunking, "library (configuration)", "MB/s", "Chunking, 21.8 MB, size 1000 / overlap 200: MB/s (higher is better)", DOCS / "chunking.png")
    retrieval = tables(DOCS / "retrieval.md")[0]
    bars(retrieval, "system", "nDCG@10", "BEIR SciFact nDCG@10, BM25 and hash-embedder hybrid", DOCS / "retrieval.png")
    models = tables(DOCS / "models.md")[0]
    bars(models, "system", "nDCG@10", "BEIR SciFact nDCG@10 with all-MiniLM-L6-v2", DOCS / "models.png")
    duckdb = [r for r in tables(DOCS / "duckdb.md")[0] if r["vectors"].startswith("100k")]
    bars(duckdb, "method", "ms / query", "Top-10 search latency, 100k x 384 (lower is better)", DOCS / "duckdb.png")
    html = tables(DOCS / "loaders.md")[0]
    bars(html, "extractor", "MB/s", "HTML text extraction throughput (higher is better)", DOCS / "loaders.png")


if __name__ == "__main__":
    main()
