"""Why an in-process loop flatters a store: the same matrix scan back to back and after an idle pause.

    python bench/serve/cache_gap.py [--rows 5200] [--dim 384]

A query arriving over HTTP finds the CPU idle for a round trip since the last
one; meanwhile the store's matrix may leave the CPU cache. This times one
``matrix @ vector`` (float32, one BLAS thread) back to back, after a sleep and
after a busy spin of the same length, and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def timed_scans(matrix: np.ndarray, vector: np.ndarray, pause: float, spin: bool, n: int = 600) -> list[float]:
    """Milliseconds of ``n`` scans, each after ``pause`` seconds of sleep (or of spinning)."""
    out = []
    for _ in range(n):
        if pause and spin:
            end = time.perf_counter() + pause
            while time.perf_counter() < end:
                pass
        elif pause:
            time.sleep(pause)
        start = time.perf_counter()
        matrix @ vector
        out.append((time.perf_counter() - start) * 1000)
    return sorted(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5200)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    rng = np.random.default_rng(0)
    matrix = rng.random((args.rows, args.dim), dtype=np.float32)
    vector = rng.random(args.dim, dtype=np.float32)
    print(f"<!-- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; "
          f"{args.rows:,} x {args.dim} float32 = {matrix.nbytes / 1e6:.1f} MB -->")
    print("| before each scan | p50 ms | p10 ms | p90 ms |")
    print("| --- | ---: | ---: | ---: |")
    for label, pause, spin in (("nothing (back to back)", 0.0, False), ("sleep 1 ms", 0.001, False), ("spin 1 ms", 0.001, True),
                               ("sleep 0.2 ms", 0.0002, False), ("nothing (back to back)", 0.0, False)):
        got = timed_scans(matrix, vector, pause, spin)
        print(f"| {label} | {got[len(got) // 2]:.3f} | {got[len(got) // 10]:.3f} | {got[9 * len(got) // 10]:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
