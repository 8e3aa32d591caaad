"""Loader benchmark: HTML extraction (ragloom vs BeautifulSoup) and PDF text extraction (ragloom/pdfminer.six vs pypdf).

Corpus, built deterministically from the SciFact abstracts
(``shared/data/scifact/corpus.jsonl``):

- HTML: pages shaped like real article pages and written compactly (no
  whitespace between tags, as minified sites are): a head with a large
  script and style, a navigation list, an article with headings, paragraphs
  with inline links/emphasis, a drop-cap first letter
  (``<span class="dropcap">T</span>he``), a list, a table and a footer.
- PDF: multi-page documents written by fpdf2 with a standard font (what most
  generated reports look like), one abstract per paragraph.

Speed is MB of input per second (best of ``--repeat`` runs, same files for
every extractor). Quality: every extracted token (split on whitespace,
surrounding punctuation stripped) must be a word of the source text;
"glued" tokens are two source words run together across a block or line
boundary ("HomeAbout", "results.Methods"), "split" tokens are fragments of
one word ("T" + "he"), "leaked" counts script/style marker tokens in the
output.

Run: ``pip install -r bench/loaders/requirements.txt`` then
``python bench/loaders/run.py [--html-mb 10] [--pdfs 30] [--pages 8] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import html as htmllib
import io
import json
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact" / "corpus.jsonl"
LEAK_MARKER = "LEAKEDSCRIPTTOKEN"
_PUNCT = "\"'“”‘’.,;:!?()[]{}<>«»-–—/\\|*#%&+=_~`^"


def load_abstracts(limit: int | None = None) -> list[tuple[str, list[str]]]:
    """``(title, sentences)`` of SciFact abstracts, Latin-1 only (the PDF fonts' repertoire)."""
    items = []
    with CORPUS.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            title = record["title"].strip().encode("latin-1", "ignore").decode("latin-1")
            sentences = [
                s.strip().encode("latin-1", "ignore").decode("latin-1") for s in record.get("abstract") or [record["text"]]
            ]
            sentences = [s for s in sentences if s]
            if title and sentences:
                items.append((title, sentences))
            if limit and len(items) >= limit:
                break
    return items


def tokens(text: str) -> list[str]:
    out = []
    for raw in text.split():
        token = raw.strip(_PUNCT)
        if token:
            out.append(token)
    return out


# ---------------------------------------------------------------- HTML corpus

NAV = ["Home", "Journals", "Topics", "Authors", "Submit", "About", "Contact"]
SCRIPT = "window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}" * 40
STYLE = "body{font-family:sans-serif;margin:0}.dropcap{float:left;font-size:3em}nav li{display:inline}" * 30


def make_page(rng: random.Random, abstracts: list[tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """One compact HTML page and the words it shows."""
    shown: list[str] = []
    title, _ = abstracts[0]
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{htmllib.escape(title)}</title>',
        f'<meta name="description" content="{htmllib.escape(title)}"><style>{STYLE}</style>',
        f"<script>{SCRIPT}var marker='{LEAK_MARKER}';</script></head><body>",
        "<header><nav><ul>" + "".join(f'<li><a href="/{n.lower()}">{n}</a></li>' for n in NAV) + "</ul></nav></header>",
        "<main><article>",
    ]
    shown += NAV
    for number, (section_title, sentences) in enumerate(abstracts):
        tag = "h1" if number == 0 else "h2"
        parts.append(f"<{tag}>{htmllib.escape(section_title)}</{tag}>")
        shown.append(section_title)
        for start in range(0, len(sentences), 3):
            paragraph = " ".join(sentences[start : start + 3])
            words = paragraph.split(" ")
            if number == 0 and start == 0 and len(words[0]) > 1 and words[0].isalpha():
                first = f'<span class="dropcap">{words[0][0]}</span>{htmllib.escape(words[0][1:])}'
            else:
                first = htmllib.escape(words[0])
            body = []
            for word in words[1:]:
                roll = rng.random()
                escaped = htmllib.escape(word)
                if roll < 0.03:
                    body.append(f'<a href="#ref{rng.randint(1, 99)}">{escaped}</a>')
                elif roll < 0.05:
                    body.append(f"<em>{escaped}</em>")
                else:
                    body.append(escaped)
            parts.append(f"<p>{first} {' '.join(body)}</p>")
            shown.append(paragraph)
        if number % 2 == 0:
            items = [s.split(".")[0][:60].rsplit(" ", 1)[0] or s[:10] for s in sentences[:3]]
            parts.append("<ul>" + "".join(f"<li>{htmllib.escape(i)}</li>" for i in items) + "</ul>")
            shown += items
    rows = [("Measure", "Value", "Unit"), ("Samples", str(rng.randint(10, 900)), "n"), ("Effect", f"{rng.random():.3f}", "ratio")]
    parts.append("<table>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows) + "</table>")
    shown += [c for row in rows for c in row]
    parts.append("</article></main><footer><p>Copyright Lumen Press</p><p>All rights reserved</p></footer>")
    shown += ["Copyright Lumen Press", "All rights reserved"]
    parts.append(f"<script>console.log('{LEAK_MARKER}')</script></body></html>")
    return "".join(parts), shown


def build_html(megabytes: float, abstracts: list[tuple[str, list[str]]]) -> tuple[list[str], set[str]]:
    rng = random.Random(3)
    pages: list[str] = []
    vocabulary: set[str] = set()
    size, cursor = 0, 0
    while size < megabytes * 1_000_000:
        take = abstracts[cursor : cursor + 12] or abstracts[:12]
        cursor = (cursor + 12) % max(len(abstracts) - 12, 1)
        page, shown = make_page(rng, take)
        pages.append(page)
        size += len(page.encode("utf-8"))
        for text in shown:
            vocabulary.update(tokens(text))
    return pages, vocabulary


# ---------------------------------------------------------------- PDF corpus


def build_pdfs(count: int, pages_per_pdf: int, abstracts: list[tuple[str, list[str]]]) -> tuple[list[bytes], set[str]]:
    from fpdf import FPDF

    vocabulary: set[str] = set()
    files: list[bytes] = []
    cursor = 0
    for number in range(count):
        pdf = FPDF(format="A4")
        pdf.set_title(f"Report {number}")
        pdf.set_author("Lumen Press")
        pdf.set_auto_page_break(True, margin=15)
        pdf.add_page()
        while pdf.page_no() < pages_per_pdf:
            title, sentences = abstracts[cursor % len(abstracts)]
            cursor += 1
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 7, title, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", size=10)
            paragraph = " ".join(sentences)
            pdf.multi_cell(0, 5, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
            vocabulary.update(tokens(title))
            vocabulary.update(tokens(paragraph))
        files.append(bytes(pdf.output()))
    return files, vocabulary


# ---------------------------------------------------------------- extractors


def ragloom_html(page: str) -> str:
    from ragloom.loaders.html import extract_html

    return extract_html(page).text


def bs4_html(parser: str, separator: str) -> Callable[[str], str]:
    from bs4 import BeautifulSoup

    def extract(page: str) -> str:
        soup = BeautifulSoup(page, parser)
        for node in soup(["script", "style", "noscript", "template", "svg"]):
            node.decompose()
        return soup.get_text(separator)

    return extract


def ragloom_pdf(data: bytes) -> str:
    from ragloom.loaders.pdf import _PageTexts

    return "\n\n".join(_PageTexts(data, "bench.pdf", "", 10**9).open())


def pypdf_pdf(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


def pdfminer_plain(data: bytes) -> str:
    from pdfminer.high_level import extract_text

    return extract_text(io.BytesIO(data))


# ---------------------------------------------------------------- measuring


def _in(word: str, vocabulary: set[str]) -> bool:
    return word.strip(_PUNCT) in vocabulary


def quality(texts: Iterable[str], vocabulary: set[str]) -> dict[str, int]:
    glued = split = leaked = total = 0
    lower = {w.lower() for w in vocabulary}
    for text in texts:
        for token in tokens(text):
            total += 1
            if token in vocabulary:
                continue
            if LEAK_MARKER in token:
                leaked += 1
            elif any(_in(token[:i], vocabulary) and _in(token[i:], vocabulary) for i in range(2, len(token) - 1)):
                glued += 1
            elif token.lower() not in lower:
                split += 1
    return {"tokens": total, "glued": glued, "split": split, "leaked": leaked}


def measure_all(extractors: list[tuple[str, Callable]], inputs: list, repeat: int) -> dict[str, tuple[float, list[str]]]:
    """Best time and outputs of each extractor; runs alternate between extractors so machine load hits all alike."""
    for _name, extract in extractors:
        extract(inputs[0])  # warm up: imports and caches are not measured
    best = {name: float("inf") for name, _ in extractors}
    outputs: dict[str, list[str]] = {}
    for _ in range(repeat):
        for name, extract in extractors:
            gc.collect()
            start = time.perf_counter()
            outputs[name] = [extract(item) for item in inputs]
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: (best[name], outputs[name]) for name, _ in extractors}


def table(title: str, rows: list[dict], baseline: str) -> str:
    base = next(r for r in rows if r["name"] == baseline)
    lines = [
        f"### {title}",
        "",
        "| extractor | MB/s | time (s) | speed vs ragloom | glued words | split words | script leaks | tokens |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['mbps']:.2f} | {r['seconds']:.2f} | {r['mbps'] / base['mbps']:.2f}x | {r['glued']} | {r['split']} | {r['leaked']} | {r['tokens']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html-mb", type=float, default=10.0)
    parser.add_argument("--pdfs", type=int, default=30)
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    abstracts = load_abstracts()
    pages, html_vocab = build_html(args.html_mb, abstracts)
    html_mb = sum(len(p.encode("utf-8")) for p in pages) / 1e6
    html_extractors = [
        ("ragloom extract_html (selectolax)", ragloom_html),
        ('bs4 + lxml, get_text("")', bs4_html("lxml", "")),
        ('bs4 + lxml, get_text("\\n")', bs4_html("lxml", "\n")),
        ('bs4 + html.parser, get_text("\\n")', bs4_html("html.parser", "\n")),
    ]
    html_rows = [
        {"name": name, "seconds": seconds, "mbps": html_mb / seconds, **quality(outputs, html_vocab)}
        for name, (seconds, outputs) in measure_all(html_extractors, pages, args.repeat).items()
    ]

    print(f"HTML: {len(pages)} pages, {html_mb:.1f} MB; best of {args.repeat}\n", flush=True)
    print(table("HTML text extraction", html_rows, html_rows[0]["name"]) + "\n", flush=True)

    pdfs, pdf_vocab = build_pdfs(args.pdfs, args.pages, abstracts[3000:])
    from pypdf import PdfReader

    pdf_mb = sum(len(p) for p in pdfs) / 1e6
    pdf_extractors = [
        ("ragloom pdf loader (pdfminer.six)", ragloom_pdf),
        ("pdfminer.six extract_text", pdfminer_plain),
        ("pypdf extract_text", pypdf_pdf),
    ]
    pdf_rows = [
        {"name": name, "seconds": seconds, "mbps": pdf_mb / seconds, **quality(outputs, pdf_vocab)}
        for name, (seconds, outputs) in measure_all(pdf_extractors, pdfs, args.repeat).items()
    ]

    page_count = sum(len(PdfReader(io.BytesIO(p)).pages) for p in pdfs)
    print(f"PDF: {len(pdfs)} files, {page_count} pages, {pdf_mb:.1f} MB; best of {args.repeat}\n")
    print(table("PDF text extraction", pdf_rows, pdf_rows[0]["name"]))


if __name__ == "__main__":
    main()
