"""``ragloom serve`` beside in-process ``Pipeline.query``: throughput and p50/p99 with 1, 4 and 16 clients.

    python bench/serve/run.py [--requests 600] [--docs 400]

Memory and DuckDB stores, hash embedder, one synthetic corpus. HTTP clients
are threads with a keep-alive connection each, measured with two clients: the
standard library's ``http.client`` (the lightest Python client: what is left
is the server's cost and the round trip) and ``httpx.Client`` (a common
choice, whose own CPU per request is several times the former's). In-process
"clients" are threads calling ``Pipeline.query``. The HTTP layer's cost at
p50 is the HTTP p50 minus the in-process p50 at the same concurrency;
``GET /health`` (no pipeline work, std-lib client) is the floor of a round
trip. The sides run in alternating rounds so each sees the same machine load.
On a busy machine wall-clock latency mostly measures waiting for a CPU, so
the CPU time per query of the process doing the work (the bench process for
in-process calls, the server process for HTTP; Linux ``/proc``) is printed too:
server minus in-process CPU is what the HTTP layer costs.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ragloom import Pipeline
from ragloom.serve.command import limit_blas_threads

WORDS = ("router reset firmware battery warranty pairing bluetooth cable charger display screen update password account "
         "shipping refund invoice policy signal antenna mesh guest network parental control speed latency").split()
QUERIES = ["factory reset router", "battery warranty period", "bluetooth pairing fails", "update firmware password",
           "refund invoice policy", "mesh network speed", "guest network password", "screen display update"]
CONFIG = """\
namespace = "bench"

[chunker]
type = "recursive"
size = 400
overlap = 40

[embedder]
type = "hash"
dim = 384

[store]
type = "{store}"
{options}

[retriever]
type = "similarity"
top_k = 5
"""


def make_corpus(folder: Path, docs: int) -> None:
    folder.mkdir(parents=True)
    for i in range(docs):
        text = " ".join(WORDS[(i * 31 + j * 7) % len(WORDS)] for j in range(600))
        (folder / f"doc{i:04d}.md").write_text(f"# Doc {i}\n\n{text}\n", encoding="utf-8")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(clients: int, total: int, make_call: Callable[[], Callable[[str], object]]) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) for ``total`` calls spread over ``clients`` threads."""
    latencies: list[float] = []
    lock = threading.Lock()
    per = total // clients

    def worker(n: int) -> None:
        call = make_call()
        mine = []
        for i in range(per):
            query = QUERIES[(n + i) % len(QUERIES)]
            start = time.perf_counter()
            call(query)
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return len(latencies) / elapsed, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(config: Path, corpus: Path, blas_threads: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom.cli", "serve", "-c", str(config), "--port", str(port), "--log-level", "warning",
         "--allow-root", str(corpus), "--blas-threads", str(blas_threads)],
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return process, base
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start")


def stdlib_client(base: str, path: str) -> Callable[[str], object]:
    """A keep-alive ``http.client`` connection that POSTs a query to ``path`` (or GETs ``/health``), reconnecting once if the server closed it."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    state = {"conn": http.client.HTTPConnection(host, int(port), timeout=60)}

    def once(query: str) -> object:
        conn = state["conn"]
        if path == "/query":
            conn.request("POST", path, json.dumps({"query": query}), {"content-type": "application/json"})
        else:
            conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)

    def call(query: str) -> object:
        try:
            return once(query)
        except (http.client.RemoteDisconnected, ConnectionError):
            state["conn"].close()
            state["conn"] = http.client.HTTPConnection(host, int(port), timeout=60)
            return once(query)

    return call


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) of a process so far: this one when ``pid`` is None (Linux /proc otherwise)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def interleaved(
    clients: int, total: int, rounds: int, makers: dict[str, Callable[[], Callable[[str], object]]], cpu_of: dict[str, int | None]
) -> dict[str, tuple[float, float, float, float]]:
    """``measure`` for each maker in alternating rounds, so every side sees the same machine load.

    Adds the CPU milliseconds per call spent by the process that does the work (``cpu_of[name]``).
    """
    parts: dict[str, list[tuple[float, float, float]]] = {name: [] for name in makers}
    latencies: dict[str, list[float]] = {name: [] for name in makers}
    cpu: dict[str, float] = {name: 0.0 for name in makers}
    for _ in range(rounds):
        for name, make in makers.items():
            got: list[float] = []
            before = cpu_seconds(cpu_of[name])

            def recording(make: Callable[[], Callable[[str], object]] = make, got: list[float] = got) -> Callable[[str], object]:
                call = make()

                def timed(query: str) -> object:
                    start = time.perf_counter()
                    out = call(query)
                    got.append(time.perf_counter() - start)
                    return out

                return timed

            parts[name].append(measure(clients, total // rounds, recording))
            cpu[name] += cpu_seconds(cpu_of[name]) - before
            latencies[name].extend(got)
    return {
        name: (
            statistics.fmean(p[0] for p in parts[name]),
            percentile(latencies[name], 0.5) * 1000,
            percentile(latencies[name], 0.99) * 1000,
            cpu[name] * 1000 / len(latencies[name]),
        )
        for name in makers
    }


def bench_store(store: str, work: Path, corpus: Path, total: int, rows: list[list[str]], blas_threads: int) -> None:
    folder = work / store
    folder.mkdir()
    config = folder / "ragloom.toml"
    config.write_text(CONFIG.format(store=store, options='path = "bench.duckdb"' if store == "duckdb" else ""), encoding="utf-8")
    with Pipeline.from_toml(config) as pipeline:
        pipeline.ingest(corpus)
    # the in-process side reads its own copy: a DuckDB file admits one process, and the server owns this one
    shutil.copytree(folder, work / f"{store}-inprocess")
    pipeline = Pipeline.from_toml(work / f"{store}-inprocess" / "ragloom.toml")
    if store == "memory":
        pipeline.ingest(corpus)
    chunks = pipeline.stats()["chunks"]
    expected = [r.chunk_id for r in pipeline.query(QUERIES[0])]

    process, base = start_server(config, corpus, blas_threads)
    try:
        if store == "memory":  # a memory store starts empty in the server process
            httpx.post(base + "/ingest", json={"source": str(corpus)}, timeout=600).raise_for_status()
        answer = httpx.post(base + "/query", json={"query": QUERIES[0]}).json()
        assert [r["chunk_id"] for r in answer["results"]] == expected, "server and in-process answers differ"

        def httpx_client() -> Callable[[str], object]:
            client = httpx.Client(base_url=base, timeout=60)

            def call(query: str) -> object:
                response = client.post("/query", json={"query": query})
                response.raise_for_status()
                return response.json()

            return call

        makers = {
            "inproc": lambda: pipeline.query,
            "http": lambda: stdlib_client(base, "/query"),
            "httpx": httpx_client,
            "health": lambda: stdlib_client(base, "/health"),
        }
        measure(4, 80, makers["http"])  # warm-up
        measure(4, 80, httpx_client)
        cpu_of = {"inproc": None, "http": process.pid, "httpx": process.pid, "health": process.pid}
        results = {c: interleaved(c, total, 4, makers, cpu_of) for c in (1, 4, 16)}
    finally:
        process.terminate()
        process.wait(timeout=30)
        pipeline.close()
    for c, got in results.items():
        (qps_i, p50_i, p99_i, cpu_i), (qps_h, p50_h, p99_h, cpu_h) = got["inproc"], got["http"]
        (qps_x, p50_x, p99_x, _), (_, p50_health, _, cpu_health) = got["httpx"], got["health"]
        rows.append([store, f"{chunks:,}", str(c), f"{qps_i:,.0f}", f"{p50_i:.2f}", f"{p99_i:.2f}", f"{qps_h:,.0f}", f"{p50_h:.2f}", f"{p99_h:.2f}",
                     f"**{p50_h - p50_i:+.2f}**", f"{qps_x:,.0f}", f"{p50_x:.2f}", f"{p99_x:.2f}", f"{p50_x - p50_i:+.2f}",
                     f"{p50_health:.2f}", f"{cpu_i:.2f}", f"{cpu_h:.2f}", f"{cpu_h - cpu_i:+.2f}", f"{cpu_health:.2f}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=640, help="queries per measurement (default 640)")
    parser.add_argument("--docs", type=int, default=400, help="synthetic documents (default 400)")
    parser.add_argument("--stores", default="memory,duckdb")
    parser.add_argument("--blas-threads", type=int, default=1, help="numpy BLAS threads, both sides (0: numpy's default)")
    args = parser.parse_args()
    limit_blas_threads(args.blas_threads)
    work = Path(tempfile.mkdtemp(prefix="ragloom-bench-serve-"))
    try:
        corpus = work / "corpus"
        make_corpus(corpus, args.docs)
        rows: list[list[str]] = []
        for store in args.stores.split(","):
            bench_store(store, work, corpus, args.requests, rows, args.blas_threads)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"<!-- {when}; {platform.python_version()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; "
          f"{args.requests} queries per cell; BLAS threads {args.blas_threads or 'default'} -->")
    print("| store | chunks | clients | in-process q/s | p50 ms | p99 ms | HTTP (http.client) q/s | p50 ms | p99 ms | HTTP − in-process p50 ms "
          "| HTTP (httpx) q/s | p50 ms | p99 ms | httpx − in-process p50 ms | GET /health p50 ms "
          "| CPU ms/query in-process | CPU ms/query server | server − in-process CPU ms | server CPU ms per /health |")
    print("| --- |" + " ---: |" * 18)
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
