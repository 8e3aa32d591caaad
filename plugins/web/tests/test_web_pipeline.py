"""End to end: a pipeline ingests pages from a real local server through the web loader."""

from __future__ import annotations

from pathlib import Path

from web_servers import LocalServer

from ragloom import Pipeline

PAGE = """<html><head><title>Lumen Lamp manual</title></head><body>
<nav>Home | Shop</nav>
<main><h1>Lumen Lamp</h1><p>The Lumen Lamp charges over USB-C in two hours.</p>
<p>Hold the button for three seconds to switch to warm light.</p></main></body></html>"""


def test_ingest_a_url_end_to_end(server: LocalServer) -> None:
    server.route("/page", PAGE)
    url = server.url("/page")
    pipeline = Pipeline.builder().loader("web", allow_private_network=True, politeness_delay=0.0, record_fetched_at=False).build()
    result = pipeline.ingest(url)
    assert result.documents == 1
    assert result.chunks >= 1
    assert result.failed == ()
    assert pipeline.sources() == [url]
    [hit, *_] = pipeline.query("how long does the lamp take to charge?")
    assert hit.source == url
    assert hit.metadata["title"] == "Lumen Lamp manual"
    again = pipeline.ingest(url)  # an unchanged page embeds nothing
    assert again.unchanged == 1
    assert again.embedded == 0


def test_without_the_opt_in_the_pipeline_records_a_blocked_failure(server: LocalServer) -> None:
    server.route("/page", PAGE)
    pipeline = Pipeline.builder().ingest_options(on_error="skip").build()
    result = pipeline.ingest(server.url("/page"))
    assert result.documents == 0
    [failure] = result.failed
    assert failure.error == "BlockedAddressError"
    assert failure.source == server.url("/page")
    assert "loopback" in failure.reason
    assert server.requests == []


def test_sources_from_toml(server: LocalServer, tmp_path: Path) -> None:
    server.route("/a", "<title>A</title><p>alpha page about lamps</p>")
    server.route("/b", "plain beta text", content_type="text/plain")
    config = tmp_path / "ragloom.toml"
    config.write_text(
        f"""
[[sources]]
urls = ["{server.url('/a')}", "{server.url('/b')}"]

[loaders.web]
allow_private_network = true
politeness_delay = 0
user_agent = "LumenDocsBot/1.0"
""",
        encoding="utf-8",
    )
    pipeline = Pipeline.from_toml(config)
    result = pipeline.ingest()
    assert result.documents == 2
    assert sorted(pipeline.sources()) == [server.url("/a"), server.url("/b")]
    assert {seen.headers["user-agent"] for seen in server.requests} == {"LumenDocsBot/1.0"}


def test_a_sitemap_ingests_every_good_page(server: LocalServer) -> None:
    for i in range(3):
        server.route(f"/p{i}", f"<p>page number {i}</p>")
    entries = "".join(f"<url><loc>{server.url(f'/p{i}')}</loc></url>" for i in (0, 1, 9, 2))
    server.route("/sitemap.xml", f"<urlset>{entries}</urlset>", content_type="application/xml")
    pipeline = Pipeline.builder().loader("web", allow_private_network=True, politeness_delay=0.0, on_url_error="skip").build()
    result = pipeline.ingest(server.url("/sitemap.xml"))
    assert result.documents == 3
    assert sorted(pipeline.sources()) == [server.url(f"/p{i}") for i in range(3)]
