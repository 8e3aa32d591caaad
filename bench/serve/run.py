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

What the HTTP layer adds is measured per request: the server reports the
pipeline's own time in a ``Server-Timing: pipeline;dur=<ms>`` header, and the
round trip minus that figure is everything else (parsing, routing, the worker
thread hop, JSON, the socket both ways). Subtracting the in-process p50 instead
mixes in a cache effect: back to back, an in-process loop finds the store's
matrix in the CPU cache, but a query arriving after an idle millisecond (what
every HTTP request is) reads it from memory, on this VM 3-6x slower for an 8 MB
matrix. Both subtractions are printed, with an in-process side that pauses
:data:`PAUSE` before each call.
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
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ragloom import Pipeline
from ragloom.serve.command import limit_blas_threads

WORDS = ("router reset firmware battery warranty pairing bluetooth cable charger display screen update password account "
         "shipping refund invoice policy signal antenna mesh guest network parental control speed latency").split()
#: the paced in-process side sleeps this long before each call: about the idle time an HTTP round trip
#: leaves between two queries of one client (on a VM the store's matrix leaves the CPU cache meanwhile)
PAUSE = 0.001
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


def measure(
    clients: int, total: int, make_call: Callable[[], Callable[[str], object]], pause: float = 0.0
) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) for ``total`` calls spread over ``clients`` threads, each pausing ``pause`` s before a call."""
    latencies: list[float] = []
    lock = threading.Lock()
    per = total // clients

    def worker(n: int) -> None:
        call = make_call()
        mine = []
        for i in range(per):
            query = QUERIES[(n + i) % len(QUERIES)]
            if pause:
                time.sleep(pause)
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
        timing = response.getheader("server-timing")
        if timing is None:
            return json.loads(body)
        return ServerTimed(json.loads(body), float(timing.partition(";dur=")[2]) / 1000)

    def call(query: str) -> object:
        try:
            return once(query)
        except (http.client.RemoteDisconnected, ConnectionError):
            state["conn"].close()
            state["conn"] = http.client.HTTPConnection(host, int(port), timeout=60)
            return once(query)

    return call


class ServerTimed:
    """An answer and the pipeline's own seconds inside the server (its ``Server-Timing`` header)."""

    def __init__(self, body: object, pipeline_seconds: float):
        self.body = body
        self.pipeline_seconds = pipeline_seconds


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) of a process so far: this one when ``pid`` is None (Linux /proc otherwise)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cell:
    """One side at one concurrency: throughput, latency percentiles, CPU per call, and the server's own view."""

    qps: float
    p50: float
    p99: float
    cpu_ms: float
    #: p50 of the pipeline's time inside the server (``Server-Timing``), ms; NaN for sides without the header
    inside_p50: float
    #: p50 over requests of (round trip − the pipeline's time inside the server): what the HTTP layer adds, ms
    layer_p50: float


def interleaved(
    clients: int,
    total: int,
    rounds: int,
    makers: dict[str, Callable[[], Callable[[str], object]]],
    cpu_of: dict[str, int | None],
    pauses: dict[str, float],
) -> dict[str, Cell]:
    """``measure`` for each maker in alternating rounds, so every side sees the same machine load.

    Adds the CPU milliseconds per call spent by the process that does the work
    (``cpu_of[name]``) and, for answers carrying ``Server-Timing``, the
    pipeline's time inside the server and the rest of each round trip.
    """
    parts: dict[str, list[tuple[float, float, float]]] = {name: [] for name in makers}
    latencies: dict[str, list[float]] = {name: [] for name in makers}
    inside: dict[str, list[float]] = {name: [] for name in makers}
    layer: dict[str, list[float]] = {name: [] for name in makers}
    cpu: dict[str, float] = {name: 0.0 for name in makers}
    for _ in range(rounds):
        for name, make in makers.items():
            before = cpu_seconds(cpu_of[name])

            def recording(make: Callable[[], Callable[[str], object]] = make, name: str = name) -> Callable[[str], object]:
                call = make()

                def timed(query: str) -> object:
                    start = time.perf_counter()
                    out = call(query)
                    seconds = time.perf_counter() - start
                    latencies[name].append(seconds)
                    if isinstance(out, ServerTimed):
                        inside[name].append(out.pipeline_seconds)
                        layer[name].append(seconds - out.pipeline_seconds)
                    return out

                return timed

            parts[name].append(measure(clients, total // rounds, recording, pauses.get(name, 0.0)))
            cpu[name] += cpu_seconds(cpu_of[name]) - before

    def p50(values: list[float]) -> float:
        return percentile(values, 0.5) * 1000 if values else float("nan")

    return {
        name: Cell(
            qps=statistics.fmean(p[0] for p in parts[name]),
            p50=p50(latencies[name]),
            p99=percentile(latencies[name], 0.99) * 1000,
            cpu_ms=cpu[name] * 1000 / len(latencies[name]),
            inside_p50=p50(inside[name]),
            layer_p50=p50(layer[name]),
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
                return ServerTimed(response.json(), float(response.headers["server-timing"].partition(";dur=")[2]) / 1000)

            return call

        makers = {
            "inproc": lambda: pipeline.query,
            "paced": lambda: pipeline.query,
            "http": lambda: stdlib_client(base, "/query"),
            "httpx": httpx_client,
            "health": lambda: stdlib_client(base, "/health"),
        }
        measure(4, 80, makers["http"])  # warm-up
        measure(4, 80, httpx_client)
        cpu_of = {"inproc": None, "paced": None, "http": process.pid, "httpx": process.pid, "health": process.pid}
        pauses = {"paced": PAUSE}
        results = {c: interleaved(c, total, 4, makers, cpu_of, pauses) for c in (1, 4, 16)}
    finally:
        process.terminate()
        process.wait(timeout=30)
        pipeline.close()
    for c, got in results.items():
        inproc, paced, http, via_httpx, health = got["inproc"], got["paced"], got["http"], got["httpx"], got["health"]
        rows.append([
            store, f"{chunks:,}", str(c), f"{inproc.qps:,.0f}", f"{inproc.p50:.2f}", f"{inproc.p99:.2f}", f"{paced.p50:.2f}",
            f"{http.qps:,.0f}", f"{http.p50:.2f}", f"{http.p99:.2f}", f"{http.inside_p50:.2f}", f"**{http.layer_p50:+.2f}**",
            f"{http.p50 - inproc.p50:+.2f}", f"{http.p50 - paced.p50:+.2f}",
            f"{via_httpx.qps:,.0f}", f"{via_httpx.p50:.2f}", f"{via_httpx.layer_p50:+.2f}",
            f"{health.p50:.2f}", f"{inproc.cpu_ms:.2f}", f"{http.cpu_ms:.2f}", f"{http.cpu_ms - inproc.cpu_ms:+.2f}", f"{health.cpu_ms:.2f}",
        ])


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
    print("| store | chunks | clients | in-process q/s | p50 ms | p99 ms | in-process p50 ms, paced | HTTP (http.client) q/s | p50 ms | p99 ms "
          "| pipeline inside the server p50 ms | **HTTP layer p50 ms** | HTTP − in-process p50 ms | HTTP − paced in-process p50 ms "
          "| HTTP (httpx) q/s | p50 ms | httpx layer p50 ms | GET /health p50 ms "
          "| CPU ms/query in-process | CPU ms/query server | server − in-process CPU ms | server CPU ms per /health |")
    print("| --- |" + " ---: |" * 21)
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
