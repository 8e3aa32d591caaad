"""``ragloom serve``: a real uvicorn server in a subprocess over a DuckDB file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx
from canary import leaked, make_canary, stored_texts
from serve_helpers import serve, write_config
from starlette.testclient import TestClient

from ragloom import Pipeline
from ragloom.serve import create_app

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["factory reset", "warranty period", "battery life", "pairing bluetooth", "firmware update", "return policy"]
TOKEN = "s3cret-token"


def _big_folder(root: Path, files: int) -> Path:
    root.mkdir(parents=True)
    for i in range(files):
        words = " ".join(f"zebra{i} quokka{j % 50} lorem{j % 13}" for j in range(300))
        (root / f"extra{i:03d}.md").write_text(f"# Extra {i}\n\n{words}\n", encoding="utf-8")
    return root


def test_eight_clients_query_while_another_ingests(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO / "examples" / "quickstart" / "corpus", data / "corpus")
    batches = [_big_folder(data / f"batch{n}", 15) for n in range(3)]
    config = write_config(tmp_path)
    with serve(config, args=["--allow-root", str(data)]) as base:
        first = httpx.post(base + "/ingest", json={"source": str(data / "corpus")}, timeout=60).json()
        assert first["documents"] == 12 and first["failed"] == []
        corpus_sources = httpx.get(base + "/sources").json()["sources"]
        scope = {"source": {"$in": corpus_sources}}  # the concurrent ingest adds other sources only
        expected = {
            q: httpx.post(base + "/query", json={"query": q, "top_k": 4, "filter": scope}, timeout=30).json()["results"] for q in QUERIES
        }
        assert all(len(v) == 4 for v in expected.values())

        failures: list[str] = []
        answered = [0] * 8
        done = threading.Event()

        def client(n: int) -> None:
            with httpx.Client(base_url=base, timeout=60) as http:
                i = n
                while not done.is_set() or answered[n] < 5:
                    q = QUERIES[i % len(QUERIES)]
                    i += 1
                    response = http.post("/query", json={"query": q, "top_k": 4, "filter": scope})
                    if response.status_code != 200 or response.json()["results"] != expected[q]:
                        failures.append(f"{q}: {response.status_code} {response.text[:200]}")
                    answered[n] += 1

        def writer(results: list) -> None:
            try:
                with httpx.Client(base_url=base, timeout=120) as http:
                    for batch in batches:
                        results.append(http.post("/ingest", json={"source": str(batch)}))
            finally:
                done.set()

        ingests: list[httpx.Response] = []
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)] + [threading.Thread(target=writer, args=(ingests,))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not failures, failures[:5]
        assert [r.status_code for r in ingests] == [200, 200, 200]
        assert [r.json()["documents"] for r in ingests] == [15, 15, 15]
        assert min(answered) >= 5
        stats = httpx.get(base + "/stats").json()
        assert stats["sources"] == 12 + 45 and stats["queries"] >= sum(answered)
        found = httpx.post(base + "/query", json={"query": "zebra7 quokka3", "top_k": 1}).json()["results"]
        assert found[0]["source"].endswith("extra007.md")
    # the server closed the file: another process may open it now and finds every source
    with Pipeline.from_toml(config) as pipeline:
        assert len(pipeline.sources()) == 57


def test_endpoints_errors_auth_and_openapi(corpus: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serve(config, args=["--allow-root", str(corpus), "--token-env", "TEST_RAGLOOM_TOKEN"], env={"TEST_RAGLOOM_TOKEN": TOKEN}) as base:
        with httpx.Client(base_url=base, timeout=60) as http:
            assert http.get("/health").json()["status"] == "ok"  # no token needed
            for method, path in (("POST", "/query"), ("GET", "/sources"), ("GET", "/stats"), ("DELETE", "/sources/x"), ("POST", "/ingest")):
                denied = http.request(method, path, json={"query": "x"})
                assert denied.status_code == 401 and denied.json()["type"] == "Unauthorized", path
                assert denied.headers["www-authenticate"] == "Bearer"
            wrong = http.get("/stats", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and set(wrong.json()) == {"error", "type", "source"}

            done = http.post("/ingest", json={"source": str(corpus)}, headers=auth).json()
            assert done["documents"] == 12
            again = http.post("/ingest", json={"source": str(corpus)}, headers=auth).json()
            assert again["unchanged"] == 12 and again["chunks"] == 0
            sources = http.get("/sources", headers=auth).json()["sources"]
            assert len(sources) == 12
            started = time.perf_counter()
            answered = http.post("/query", json={"query": "factory reset", "top_k": 2}, headers=auth)
            wall_ms = (time.perf_counter() - started) * 1000
            name, _, duration = answered.headers["server-timing"].partition(";dur=")
            assert name == "pipeline" and 0 < float(duration) < wall_ms  # the query's own time, inside the round trip
            hits = answered.json()
            assert hits["query"] == "factory reset" and len(hits["results"]) == 2
            first = hits["results"][0]
            assert set(first) >= {"rank", "score", "source", "span", "chunk_id", "text", "metadata"}

            target = sources[0]
            removed = http.delete("/sources/" + quote(target, safe=""), headers=auth).json()
            assert removed["source"] == target and removed["removed"] > 0
            assert target not in http.get("/sources", headers=auth).json()["sources"]
            assert http.get("/stats", headers=auth).json()["sources"] == 11

            def error(response: httpx.Response, status: int, kind: str) -> dict:
                body = response.json()
                assert response.status_code == status, body
                assert set(body) == {"error", "type", "source"} and body["type"] == kind, body
                return body

            error(http.post("/query", content=b"{not json", headers=auth), 400, "InvalidJSON")
            error(http.post("/query", json=["a"], headers=auth), 400, "InvalidJSON")
            error(http.post("/query", json={"query": "x", "drop": 1}, headers=auth), 400, "ValidationError")
            error(http.post("/query", json={"query": ""}, headers=auth), 400, "ConfigError")
            error(http.post("/query", json={"query": "x", "top_k": "many"}, headers=auth), 400, "ValidationError")
            assert "$where" in error(http.post("/query", json={"query": "x", "filter": {"a": {"$where": 1}}}, headers=auth), 400, "FilterError")["error"]
            outside = error(http.post("/ingest", json={"source": "/etc/passwd"}, headers=auth), 403, "ConfinementError")
            assert "outside" in outside["error"]
            error(http.post("/ingest", json={"source": "http://169.254.169.254/"}, headers=auth), 403, "ValueError")
            gone = error(http.post("/ingest", json={"source": str(corpus / "nope.md")}, headers=auth), 422, "LoaderError")
            assert "no such file" in gone["error"] and gone["source"] == str(corpus / "nope.md")
            error(http.get("/nowhere", headers=auth), 404, "NotFound")
            error(http.put("/query", headers=auth), 405, "MethodNotAllowed")
            error(http.post("/query", content=b"x" * (2 << 20), headers=auth), 413, "PayloadTooLarge")

            # the server owns the DuckDB file: another process gets a clear error, not a traceback
            other = subprocess.run([sys.executable, "-m", "ragloom.cli", "-c", str(config), "stats"], capture_output=True, text=True, timeout=120)
            assert other.returncode == 1 and "another process" in other.stderr and "Traceback" not in other.stderr

            schema = http.get("/openapi.json", headers=auth).json()
            assert schema["openapi"].startswith("3.1")
            assert set(schema["paths"]) == {"/query", "/ingest", "/sources", "/sources/{source}", "/stats", "/health", "/openapi.json"}
            assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
            assert schema["paths"]["/health"]["get"]["security"] == []
            assert schema["components"]["schemas"]["Error"]["required"] == ["error", "type", "source"]


def test_ingest_is_disabled_without_allowed_roots(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    with TestClient(create_app(pipeline)) as http:
        answer = http.post("/ingest", json={"source": str(tmp_path)})
        assert answer.status_code == 403 and answer.json()["type"] == "IngestDisabled"
        assert http.get("/openapi.json").json()["paths"]["/query"]["post"]["responses"]["200"]
        assert "security" not in http.get("/openapi.json").json()


def test_writes_to_one_source_wait_for_each_other() -> None:
    import asyncio

    from ragloom.serve.locks import SourceLocks

    async def run() -> list[str]:
        locks = SourceLocks()
        order: list[str] = []

        async def write(source: str, name: str, hold: float) -> None:
            async with locks.hold(source):
                order.append(f"{name}+")
                await asyncio.sleep(hold)
                order.append(f"{name}-")

        await asyncio.gather(
            write("/data/docs", "dir", 0.05),
            write("/data/docs/a.md", "inside", 0.01),  # overlaps the folder: waits
            write("/data/other.md", "other", 0.01),  # unrelated: runs at once
            write("https://example.com/a", "url", 0.01),
        )
        return order

    order = asyncio.run(run())
    assert order.index("inside+") > order.index("dir-")
    assert order.index("other+") < order.index("dir-") and order.index("url+") < order.index("dir-")


def test_serve_ingest_never_reads_the_canary(tmp_path: Path) -> None:
    canary = make_canary(tmp_path)
    config = write_config(tmp_path)
    bodies: list[str] = []
    with serve(config, args=["--allow-root", str(canary.root)]) as base, httpx.Client(base_url=base, timeout=60) as http:
        for source in (canary.root, *canary.links, canary.links[1] / "canary.md"):
            bodies.append(http.post("/ingest", json={"source": str(source)}).text)
        found = http.post("/query", json={"query": "CANARY-7f3a secret payroll figures", "top_k": 10}).json()
        bodies.append(json.dumps(found["results"]))  # the query itself is echoed; the results must not hold the canary
        bodies.append(http.get("/sources").text)
    assert not any(leaked(b) for b in bodies), [b[:300] for b in bodies if leaked(b)]
    with Pipeline.from_toml(config) as pipeline:
        assert not leaked(stored_texts(pipeline))
